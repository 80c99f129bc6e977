#!/bin/bash
# usage: measure.sh PYTHON DEPTH main|thread
# Prints, for each thread blocked in a syscall, the bytes between its user SP
# (from /proc/PID/task/TID/syscall) and the root of its stack: startstack
# (/proc/PID/stat field 28, where argc sits) for the main thread, the end of
# the stack mapping for other threads (glibc's struct pthread + TLS sit there).
py=$1; d=$2; mode=$3
$py "$(dirname "$0")"/depth.py $d $mode & pid=$!
sleep 1.2
startstack=$(awk '{print $28}' /proc/$pid/stat)
for t in /proc/$pid/task/*; do
  tid=${t##*/}
  read -r nr a1 a2 a3 a4 a5 a6 sp pc < $t/syscall 2>/dev/null || continue
  [ "$nr" = "running" ] && continue
  [ "$nr" = "202" ] && [ $mode = thread ] && [ $tid = $pid ] && continue   # main thread in join
  spd=$((sp))
  if [ $tid = $pid ]; then
    echo "$(basename $py) depth=$d $mode sp_to_root=$((startstack - spd))"
  else
    while read -r range perms off dev ino path; do
      s=$((16#${range%-*})); e=$((16#${range#*-}))
      [ $spd -ge $s ] && [ $spd -lt $e ] && echo "$(basename $py) depth=$d $mode sp_to_map_end=$((e - spd))"
    done < /proc/$pid/maps
  fi
done
wait $pid
