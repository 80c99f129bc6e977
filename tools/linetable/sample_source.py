# Sample source for the line-table fixtures.
#
# tools/linetable/record.py compiles this file (it is never executed) with each
# CPython 3.8-3.13 and records, for every code object, the raw line table and
# the line the interpreter itself assigns to every instruction. It must stay
# valid Python 3.8 syntax so that every version compiles the same text.
#
# The long runs of blank and comment lines are deliberate: they force line
# number jumps of exact sizes (127, 128, 129, 254, 255, 256, 300 and 2100
# lines, forwards and backwards) so that the edges of every encoding are hit:
# co_lnotab's signed byte (-128..127), 3.10's -128 "no line" marker, and the
# 6-bit-chunk varints of the 3.11+ location table. Do not reformat this file.

import functools
import os as _os, sys as _sys


def deco(fn):
    return fn


def deco_factory(*args, **kwargs):
    def wrap(fn):
        return fn
    return wrap


@deco
@deco_factory(1,
              two=2)
def decorated(a,
              b=2,
              *args,
              **kw):
    """Docstring."""
    return a + b


def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while total < i:
            total += 1
            if total > 100:
                break
        else:
            total -= 1
    for j in range(n):
        pass
    else:
        total += j
    return total


def exceptions(x):
    try:
        y = 1 / x
    except ZeroDivisionError as exc:
        y = str(exc)
    except (TypeError, ValueError):
        y = None
    else:
        y = y * 2
    finally:
        x = None
    try:
        pass
    finally:
        y = y or 0
    try:
        for k in range(3):
            try:
                continue
            finally:
                y += k
    except Exception:
        raise
    return y


def with_statements(path):
    with open(path) as f, open(path) as g:
        data = f.read() + g.read()
    with open(path):
        pass
    with open(path) as h:
        return h.read() + data


def generators(n):
    yield 1
    yield from range(n)
    x = yield
    return x


async def coroutine(a):
    await a
    async with a as b:
        pass
    async for item in a:
        await item
    return [i async for i in a], b


def comprehensions(data):
    squares = [x * x for x in data if x]
    pairs = {k: v for k, v in zip(data, data)}
    unique = {x for x in data}
    gen = (x + 1 for x in data)
    nested = [[y for y in range(x)] for x in data]
    key = lambda item: (item,
                        item)
    spread = [
        x

        # comment in the middle of a comprehension

        for x in data
        if x
    ]
    return sorted(squares, key=lambda v: -v), pairs, unique, list(gen), nested, key, spread


def closures():
    counter = 0

    def inc(step=1):
        nonlocal counter
        counter += step
        return counter

    def outer():
        def inner():
            return inc()
        return inner
    return outer()()


class Sample(object):
    """Class body with methods."""
    attr = 1
    other = [attr for _ in range(3)]

    def __init__(self, value):
        self.value = value

    @property
    def prop(self):
        return self.value

    @staticmethod
    def static(a, b):
        return a if a else b

    class Nested:
        def method(self):
            return super().__repr__()


def multi_line_expressions(a, b, c):
    x = (a +
         b *
         c)
    y = a if (b and
              c) else (
        b
    )
    z = f"""{a}-{
b}""" if False else f"{a}"
    call = dict(
        first=a,
        # a comment between arguments

        second=b,
        third=[c,
               c],
    )
    chained = a < b <= c != (
        a)
    assert a, (
        "message")
    return x, y, z, call, chained


def long_function(a, b, c):
    # More than 256 bytes of bytecode spread over many lines, with a loop body
    # long enough to need EXTENDED_ARG jumps in 3.8/3.9.
    x = a + b
    y = b * c
    z = x - y
    for i in range(a):
        x += i * 2
        y -= i // 3
        z ^= i << 1
        if x > y:
            x, y = y, x
        elif z:
            z = -z
        else:
            z = ~z
        x = x % 7 + y % 11 + z % 13
        y = [x, y, z][i % 3]
        z = {"x": x, "y": y}.get("z", z)
        a = a and b or c
        b = (a, b, c)[1]
        c = str(a) + str(b) + str(c)
        c = len(c)
        x = x + 1
        y = y + 2
        z = z + 3
        x = x * y * z
        y = y // (z or 1)
        z = abs(z) + abs(y) + abs(x)
    w = [x, y, z, a, b, c]
    w.sort()
    w.reverse()
    w = tuple(w)
    return w


def one_huge_line(a):
    values = [a(1000), a(1001), a(1002), a(1003), a(1004), a(1005), a(1006), a(1007), a(1008), a(1009), a(1010), a(1011), a(1012), a(1013), a(1014), a(1015), a(1016), a(1017), a(1018), a(1019), a(1020), a(1021), a(1022), a(1023), a(1024), a(1025), a(1026), a(1027), a(1028), a(1029), a(1030), a(1031), a(1032), a(1033), a(1034), a(1035), a(1036), a(1037), a(1038), a(1039), a(1040), a(1041), a(1042), a(1043), a(1044), a(1045), a(1046), a(1047), a(1048), a(1049), a(1050), a(1051), a(1052), a(1053), a(1054), a(1055), a(1056), a(1057), a(1058), a(1059), a(1060), a(1061), a(1062), a(1063), a(1064), a(1065), a(1066), a(1067), a(1068), a(1069), a(1070), a(1071), a(1072), a(1073), a(1074), a(1075), a(1076), a(1077), a(1078), a(1079), a(1080), a(1081), a(1082), a(1083), a(1084), a(1085), a(1086), a(1087), a(1088), a(1089), a(1090), a(1091), a(1092), a(1093), a(1094), a(1095), a(1096), a(1097), a(1098), a(1099), a(1100), a(1101), a(1102), a(1103), a(1104), a(1105), a(1106), a(1107), a(1108), a(1109), a(1110), a(1111), a(1112), a(1113), a(1114), a(1115), a(1116), a(1117), a(1118), a(1119), a(1120), a(1121), a(1122), a(1123), a(1124), a(1125), a(1126), a(1127), a(1128), a(1129), a(1130), a(1131), a(1132), a(1133), a(1134), a(1135), a(1136), a(1137), a(1138), a(1139), a(1140), a(1141), a(1142), a(1143), a(1144), a(1145), a(1146), a(1147), a(1148), a(1149), a(1150), a(1151), a(1152), a(1153), a(1154), a(1155), a(1156), a(1157), a(1158), a(1159), a(1160), a(1161), a(1162), a(1163), a(1164), a(1165), a(1166), a(1167), a(1168), a(1169), a(1170), a(1171), a(1172), a(1173), a(1174), a(1175), a(1176), a(1177), a(1178), a(1179), a(1180), a(1181), a(1182), a(1183), a(1184), a(1185), a(1186), a(1187), a(1188), a(1189), a(1190), a(1191), a(1192), a(1193), a(1194), a(1195), a(1196), a(1197), a(1198), a(1199), a(1200), a(1201), a(1202), a(1203), a(1204), a(1205), a(1206), a(1207), a(1208), a(1209), a(1210), a(1211), a(1212), a(1213), a(1214), a(1215), a(1216), a(1217), a(1218), a(1219), a(1220), a(1221), a(1222), a(1223), a(1224), a(1225), a(1226), a(1227), a(1228), a(1229), a(1230), a(1231), a(1232), a(1233), a(1234), a(1235), a(1236), a(1237), a(1238), a(1239), a(1240), a(1241), a(1242), a(1243), a(1244), a(1245), a(1246), a(1247), a(1248), a(1249), a(1250), a(1251), a(1252), a(1253), a(1254), a(1255), a(1256), a(1257), a(1258), a(1259), a(1260), a(1261), a(1262), a(1263), a(1264), a(1265), a(1266), a(1267), a(1268), a(1269), a(1270), a(1271), a(1272), a(1273), a(1274), a(1275), a(1276), a(1277), a(1278), a(1279), a(1280), a(1281), a(1282), a(1283), a(1284), a(1285), a(1286), a(1287), a(1288), a(1289), a(1290), a(1291), a(1292), a(1293), a(1294), a(1295), a(1296), a(1297), a(1298), a(1299)]
    return values


def long_columns(x):
    s = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + str(x) + "tail" + str(
        x)
    return s


def line_jumps(f, a):
    # Each call starts on one line and has its argument N lines further down,
    # so the argument is a forward jump of N and the call itself (attributed
    # to the line it starts on) a backward jump of N.
    r127 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap






        a)
    r128 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap







        a)
    r129 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap








        a)
    r254 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap





        a)
    r255 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap






        a)
    r256 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap







        a)
    r300 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap



        a)
    r2100 = f(







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap











        a)
    return r127, r128, r129, r254, r255, r256, r300, r2100


def long_loop_body(n):
    # The loop test is re-evaluated at the bottom in 3.10+, 300 lines back up.
    while n > 0:
        n -= 1







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap




        n -= 0
    return n


def late_function(a, b):
    # Starts far beyond line 1000.
    try:
        with a:
            for item in b:
                if item:
                    break
            else:
                return None
    except (KeyError,
            IndexError) as e:
        return e
    finally:
        del a
    return [lambda: item for item in b]


class LateClass:
    @functools.lru_cache(maxsize=None)
    def cached(self, x):
        return x

    def generator_method(self):
        for x in range(3):
            try:
                yield x
            except GeneratorExit:
                return


def very_late_function(x):
    # First line above 4096 to use a first_line needing large line numbers.
    return (x,







        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap















        # gap











            x)


if __name__ == "__main__":
    try:
        print(late_function(None, []))
    except Exception as err:
        print(err)
    finally:
        _sys.stdout.flush()
