// SPDX-License-Identifier: Apache-2.0
#include "dump/python_locks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "python/process.hpp"
#include "util/text.hpp"

namespace pyebpf::dump {
namespace {

constexpr std::size_t kMaxSlots = 1024;     // a frame's locals and value stack, read at most
constexpr std::size_t kHolderFrames = 32;   // frames of each thread searched for a `with` block
constexpr std::size_t kTypeNameBytes = 64;  // "builtin_function_or_method" and the like

// 3.14+ keep _PyStackRef in frames: bit 0 marks a borrowed or immortal
// reference, both low bits a tagged int. Earlier pointers are 8-aligned.
std::uint64_t untag(std::uint64_t v) {
  return (v & 3) == 3 ? 0 : v & ~std::uint64_t{3};
}

// One of _thread's lock types as this build lays it out.
struct LockType {
  std::string name;                    // "threading.Lock"
  std::uint64_t type = 0;              // the type object in the target
  std::optional<std::uint32_t> sem;    // sem_t* (≤ 3.13.0): the futex word is *sem
  std::optional<std::uint32_t> mutex;  // PyMutex (3.13.1+): a parked waiter's wait_entry.addr points at it
  std::optional<std::uint32_t> owner;  // RLock: the owner's thread ident, 0 when free
};

// The row describing objects of C struct `c_struct` that are `size` bytes:
// the target's own, else another build of its minor (3.13.0's Lock holds a
// sem_t, 3.13.1's a PyMutex: one minor, two layouts), all from DWARF.
const python::OffsetsRow* row_for_size(const python::OffsetsRow& own, std::string_view c_struct, std::int64_t size) {
  auto fits = [&](const python::OffsetsRow& row) {
    auto s = row.size(c_struct);
    return s && static_cast<std::int64_t>(*s) == size;
  };
  if (fits(own)) return &own;
  for (const auto& row : python::OffsetsTable::embedded().rows())
    if (row.minor == own.minor && fits(row)) return &row;
  return nullptr;
}

// A field the target's row has, else the first row of its minor that has
// it (the parking lot's wait_entry is one layout per minor).
std::optional<std::uint32_t> field_of_minor(const python::OffsetsRow& own, std::string_view name) {
  if (auto f = own.field(name)) return f;
  for (const auto& row : python::OffsetsTable::embedded().rows())
    if (row.minor == own.minor)
      if (auto f = row.field(name)) return f;
  return std::nullopt;
}

class PythonWaits {
 public:
  PythonWaits(DumpedProcess& p, const python::PythonProcess& python)
      : p_(p), objects_(python.objects()), memory_(objects_.memory()), row_(python.offsets()) {
    const std::uint64_t interp_ptr = python.bpf_config().runtime + python.bpf_config().layout.runtime_interp_head;
    add_lock_type(interp_ptr, "LockType", "lockobject", "lock", "threading.Lock");
    add_lock_type(interp_ptr, "RLock", "rlockobject", "rlock", "threading.RLock");
    parked_addr_ = field_of_minor(row_, "parked.addr");
    parked_sema_ = field_of_minor(row_, "parked.sema");
    for (const auto& t : p_.threads)
      if (t.raw.hdr.thread_id) by_ident_[t.raw.hdr.thread_id] = &t;
  }

  void run() {
    // A Lock's holder is inferred from the other threads' frames, less the
    // threads waiting for that lock: only once every wait is named.
    std::vector<DumpedThread*> lock_waits;
    for (auto& t : p_.threads) {
      if (t.wait.kind != "futex") continue;
      if (name_join(t)) continue;
      auto lock = lock_at_futex(t, t.wait.address);
      if (!lock) continue;
      const LockType& type = *lock_type_of(*lock);
      t.wait.kind = "lock";
      t.wait.address = *lock;
      t.wait.object = {{"address", hex(*lock)}, {"type", type.name}};
      if (name_condition(t)) continue;
      if (type.owner) {
        const std::uint64_t ident = memory_.read_u64(*lock + *type.owner).value_or(0);
        describe_holder(t, ident ? by_ident(ident) : nullptr, ident, "recorded");
      } else {
        lock_waits.push_back(&t);
      }
    }
    for (DumpedThread* t : lock_waits) {
      const DumpedThread* holder = inferred_holder(t->wait.address);
      describe_holder(*t, holder, holder ? holder->raw.hdr.thread_id : 0, "inferred");
    }
  }

 private:
  void add_lock_type(std::uint64_t interp_ptr, const char* global, const char* c_struct, const std::string& prefix,
                     const char* name) {
    auto type = objects_.module_global(interp_ptr, "_thread", global);
    if (!type) return;  // _thread not imported (or unreadable): no Python lock to wait on
    auto size = memory_.read_value<std::int64_t>(*type + row_.require("type.basicsize"));
    const python::OffsetsRow* row = size ? row_for_size(row_, c_struct, *size) : nullptr;
    LockType lt{name, *type, std::nullopt, std::nullopt, std::nullopt};
    if (row)
      lt = {name, *type, row->field(prefix + ".sem"), row->field(prefix + ".mutex"), row->field(prefix + ".owner")};
    if (!lt.sem && !lt.mutex) {
      p_.problems.push_back(
          fmt::format("{} waits show as futex addresses: its objects are {} bytes in this build, "
                      "which no offsets row of {} describes",
                      name, size ? std::to_string(*size) : "an unreadable number of", row_.minor));
      return;
    }
    lock_types_.push_back(lt);
  }

  const LockType* lock_type_of(std::uint64_t obj) const {
    if (!obj) return nullptr;
    auto type = objects_.type_of(obj);
    for (const auto& lt : lock_types_)
      if (type == lt.type) return &lt;
    return nullptr;
  }

  // The lock whose futex word `uaddr` is. 3.13.1+: the futex is the
  // semaphore inside the waiter's parking-lot entry, whose `addr` points at
  // the lock's PyMutex. Earlier: the futex is the lock's own sem_t, which
  // nothing points back from, so candidates come from the waiting frame (the
  // lock, or a bound method of it) and must match exactly: stale stack slots
  // hold other locks too.
  std::optional<std::uint64_t> lock_at_futex(const DumpedThread& t, std::uint64_t uaddr) {
    if (parked_addr_ && parked_sema_) {
      auto parked_on = memory_.read_u64(uaddr - *parked_sema_ + *parked_addr_);
      for (const auto& lt : lock_types_) {
        if (!parked_on || !lt.mutex) continue;
        const std::uint64_t lock = *parked_on - *lt.mutex;
        if (lock_type_of(lock) == &lt) return lock;
      }
    }
    if (!t.raw.py.depth) return std::nullopt;
    for (std::uint64_t slot : frame_slots(t.raw.py_frames[0])) {
      for (std::uint64_t candidate : {slot, bound_self(slot)}) {
        const LockType* lt = lock_type_of(candidate);
        if (lt && lt->sem && memory_.read_u64(candidate + *lt->sem) == uaddr) return candidate;
      }
    }
    return std::nullopt;
  }

  std::uint64_t bound_self(std::uint64_t obj) const {
    auto self_at = row_.field("cfunction.self");
    auto self = self_at ? memory_.read_u64(obj + *self_at) : std::nullopt;
    return self ? *self : 0;
  }

  // The object slots of a frame, locals first, then its value stack, tags
  // dropped: up to the stack pointer where the frame records it (3.14+),
  // else to the deepest the code can use (slots past the live top are
  // stale: callers must check what they find).
  std::vector<std::uint64_t> frame_slots(std::uint64_t frame) const {
    auto localsplus = row_.field("frame.localsplus");
    auto code_at = row_.field("frame.code");
    auto stacksize_at = row_.field("code.stacksize");
    if (!frame || !localsplus || !code_at || !stacksize_at) return {};
    auto code_ref = memory_.read_u64(frame + *code_at);
    const std::uint64_t code = code_ref ? untag(*code_ref) : 0;
    if (!code || objects_.type_of(code) != objects_.types().code) return {};
    auto stacksize = memory_.read_value<std::int32_t>(code + *stacksize_at);
    if (!stacksize || *stacksize < 0) return {};
    const std::uint64_t first = frame + *localsplus;
    std::uint64_t slots = 0;
    if (auto valuestack_at = row_.field("frame.valuestack")) {  // ≤ 3.10: locals, cells, frees, then the stack
      auto valuestack = memory_.read_u64(frame + *valuestack_at);
      if (!valuestack || *valuestack < first) return {};
      slots = (*valuestack - first) / 8 + static_cast<std::uint64_t>(*stacksize);
    } else {
      auto nlocalsplus_at = row_.field("code.nlocalsplus");
      auto nlocalsplus = nlocalsplus_at ? memory_.read_value<std::int32_t>(code + *nlocalsplus_at) : std::nullopt;
      if (!nlocalsplus || *nlocalsplus < 0) return {};
      slots = static_cast<std::uint64_t>(*nlocalsplus) + static_cast<std::uint64_t>(*stacksize);
      if (auto sp_at = row_.field("frame.stackpointer")) {
        auto sp = memory_.read_u64(frame + *sp_at);
        if (sp && *sp >= first) slots = std::min(slots, (*sp - first) / 8);
      }
    }
    slots = std::min<std::uint64_t>(slots, kMaxSlots);
    auto bytes = memory_.read_bytes(first, slots * 8);
    if (!bytes) return {};
    std::vector<std::uint64_t> out(slots);
    std::memcpy(out.data(), bytes->data(), slots * 8);
    for (auto& v : out) v = untag(v);
    return out;
  }

  // tp_name of an object's type, cached by type; "" if unreadable.
  const std::string& type_name(std::uint64_t obj) {
    static const std::string none;
    auto type = obj ? objects_.type_of(obj) : std::nullopt;
    if (!type) return none;
    auto [it, added] = type_names_.try_emplace(*type);
    if (added) {
      auto name_ptr = memory_.read_u64(*type + row_.require("type.name"));
      // Up to the end of its page, so a name near an unmapped one still reads.
      const std::size_t len = name_ptr ? std::min<std::uint64_t>(kTypeNameBytes, 4096 - (*name_ptr & 4095)) : 0;
      auto bytes = len ? memory_.read_bytes(*name_ptr, len) : std::nullopt;
      if (bytes) it->second.assign(bytes->begin(), std::find(bytes->begin(), bytes->end(), 0));
    }
    return it->second;
  }

  // A `with lock:` block the frame is inside: 3.8–3.13 keep the lock's bound
  // __exit__ (a builtin method whose self is the lock) on the value stack
  // for the whole block; 3.14+ keep the __exit__ descriptor and the lock
  // itself, below the stack pointer.
  bool frame_holds(std::uint64_t frame, std::uint64_t lock) {
    const auto slots = frame_slots(frame);
    const bool stack_refs = row_.field("frame.stackpointer").has_value();
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (stack_refs) {
        if (i > 0 && slots[i] == lock && type_name(slots[i - 1]) == "method_descriptor") return true;
      } else if (slots[i] && type_name(slots[i]) == "builtin_function_or_method" && bound_self(slots[i]) == lock) {
        return true;
      }
    }
    return false;
  }

  // A threading.Lock records no owner. The one thread, not itself waiting
  // for it, with a `with` block on it in one of its frames; none if no
  // thread or more than one has.
  const DumpedThread* inferred_holder(std::uint64_t lock) {
    const DumpedThread* holder = nullptr;
    for (const auto& u : p_.threads) {
      if ((u.wait.kind == "lock" || u.wait.kind == "condition") && u.wait.address == lock) continue;
      const std::size_t frames = std::min<std::size_t>({u.raw.py.depth, PYEBPF_MAX_FRAMES, kHolderFrames});
      for (std::size_t i = 0; i < frames; ++i) {
        if (!frame_holds(u.raw.py_frames[i], lock)) continue;
        if (holder && holder != &u) return nullptr;
        holder = &u;
        break;
      }
    }
    return holder;
  }

  const DumpedThread* by_ident(std::uint64_t ident) const {
    auto it = by_ident_.find(ident);
    return it == by_ident_.end() ? nullptr : it->second;
  }

  void describe_holder(DumpedThread& t, const DumpedThread* holder, std::uint64_t ident, const char* how) {
    const std::string what = t.wait.object.at("type").get<std::string>() + " " + hex(t.wait.address);
    t.wait.owner_ident = ident;
    if (holder == &t) holder = nullptr;  // an RLock it holds itself is not what it waits for
    if (holder) {
      t.waits_for = static_cast<pid_t>(holder->raw.hdr.tid);
      t.wait.object["owner_tid"] = holder->raw.hdr.tid;
      t.wait.object["owner"] = how;
      t.wait.text = fmt::format("{}, held by {} (tid {}{})", what, holder->thread_name, holder->raw.hdr.tid,
                                std::string_view(how) == "inferred" ? ", inferred" : "");
    } else if (ident) {
      t.wait.object["owner_ident"] = hex(ident);
      t.wait.object["owner"] = how;
      t.wait.text = fmt::format("{}, held by thread ident {} (not among the threads read)", what, hex(ident));
    } else {
      t.wait.object["owner"] = nullptr;
      t.wait.text = what + " (holder not recorded)";
    }
  }

  bool leaf_is(const DumpedThread& t, std::initializer_list<std::string_view> functions) const {
    if (t.py_stack.empty() || !t.py_stack.back().file.ends_with("threading.py")) return false;
    return std::find(functions.begin(), functions.end(), t.py_stack.back().function) != functions.end();
  }

  // Condition.wait blocks on a lock of its own, made for this one wait and
  // already held by the waiter: what it waits for is a notify() on the
  // Condition (its frame's `self`), from whatever called it. False if the
  // wait is not one.
  bool name_condition(DumpedThread& t) {
    if (!leaf_is(t, {"Condition.wait", "wait"})) return false;
    const auto slots = frame_slots(t.raw.py_frames[0]);
    if (slots.empty() || !slots[0]) return false;
    const std::uint64_t waiter_lock = t.wait.address;
    std::string caller = t.py_stack.size() > 1 ? std::string(t.py_stack[t.py_stack.size() - 2].function) : "";
    t.wait.kind = "condition";
    t.wait.address = slots[0];
    t.wait.object = {{"address", hex(slots[0])}, {"type", "threading.Condition"}, {"lock", hex(waiter_lock)}};
    if (!caller.empty()) t.wait.object["in"] = caller;
    t.wait.text =
        fmt::format("threading.Condition {}{}, until notify()", hex(slots[0]), caller.empty() ? "" : " in " + caller);
    return true;
  }

  // Thread.join: waits for the thread the frame's `self` is (its _ident).
  bool name_join(DumpedThread& t) {
    if (!leaf_is(t, {"Thread.join", "join", "Thread._wait_for_tstate_lock", "_wait_for_tstate_lock"})) return false;
    const auto slots = frame_slots(t.raw.py_frames[0]);
    if (slots.empty() || !slots[0]) return false;
    auto attrs = objects_.instance_attrs(slots[0], {"_ident"});
    auto ident = attrs[0] ? objects_.read_int(*attrs[0]) : std::nullopt;
    if (!ident) return false;
    const DumpedThread* joined = by_ident(static_cast<std::uint64_t>(*ident));
    t.wait.kind = "thread";
    t.wait.address = slots[0];
    t.wait.owner_ident = static_cast<std::uint64_t>(*ident);
    t.wait.object = {{"address", hex(slots[0])}, {"type", "threading.Thread"}, {"ident", hex(t.wait.owner_ident)}};
    if (joined) {
      t.waits_for = static_cast<pid_t>(joined->raw.hdr.tid);
      t.wait.object["owner_tid"] = joined->raw.hdr.tid;
      t.wait.text = fmt::format("thread {} (tid {}) to finish (join)", joined->thread_name, joined->raw.hdr.tid);
    } else {
      t.wait.text = fmt::format("thread ident {} to finish (join)", hex(t.wait.owner_ident));
    }
    return true;
  }

  DumpedProcess& p_;
  const python::ObjectReader& objects_;
  const python::ProcessMemory& memory_;
  const python::OffsetsRow& row_;
  std::vector<LockType> lock_types_;
  std::optional<std::uint32_t> parked_addr_, parked_sema_;
  std::map<std::uint64_t, const DumpedThread*> by_ident_;
  std::map<std::uint64_t, std::string> type_names_;
};

}  // namespace

void name_python_waits(DumpedProcess& p, const python::PythonProcess& python) {
  const bool any_futex =
      std::any_of(p.threads.begin(), p.threads.end(), [](const DumpedThread& t) { return t.wait.kind == "futex"; });
  if (!any_futex) return;
  python::ProcessMemory::Batch batch(python.objects().memory());
  PythonWaits(p, python).run();
}

}  // namespace pyebpf::dump
