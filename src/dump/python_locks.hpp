// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "dump/threads.hpp"

namespace pyebpf::python {
class PythonProcess;
}

namespace pyebpf::dump {

// Names the Python object behind each futex wait of `p` that is one, and
// who holds it:
//   lock       a threading.Lock or RLock: its address; the holder an RLock
//              records, or, for a Lock (which records none), the one other
//              thread with a `with` block on that lock on its stack
//              (wait.object.owner says "recorded" or "inferred")
//   condition  threading.Condition.wait (and so Event.wait, Queue.get...)
//   thread     Thread.join: the thread it waits to finish
// Sets waits_for where the holder is a thread of `p`. The futex word is
// matched to the lock exactly (the lock's sem_t, or the 3.13.1+ parking
// lot's wait entry pointing at its PyMutex), never guessed from the stack.
// Runs after name_waits has marked futex waits; problems go to p.problems.
void name_python_waits(DumpedProcess& p, const python::PythonProcess& python);

}  // namespace pyebpf::dump
