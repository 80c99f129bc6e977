// SPDX-License-Identifier: Apache-2.0
// Thread names read from a live interpreter: a thread that has started but
// not yet registered in threading._active (a collection in its
// _bootstrap_inner, say) is named from threading._limbo, every time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "installed_pythons.hpp"
#include "python/offsets.hpp"
#include "python/process.hpp"

namespace pyebpf::python {
namespace {

// A thread held after threading set its _ident and _native_id, before it is
// in _active: it prints both and waits forever (start() in the main thread
// waits for it too). Killed by the test.
constexpr const char* kHeldThread = R"(
import threading
class Held(threading.Thread):
    def _set_native_id(self):
        super()._set_native_id()
        print(self._ident, self._native_id, flush=True)
        threading.Event().wait()
Held(name="Starting-1").start()
)";

class HeldThread {
 public:
  explicit HeldThread(const std::string& python) {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      execl(python.c_str(), python.c_str(), "-c", kHeldThread, nullptr);
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    if (!f) return;
    unsigned long long ident = 0;
    unsigned native_id = 0;
    if (std::fscanf(f, "%llu %u", &ident, &native_id) == 2) ident_ = ident, native_id_ = native_id;
    std::fclose(f);
  }
  ~HeldThread() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  std::uint64_t ident() const { return ident_; }
  std::uint32_t native_id() const { return native_id_; }

 private:
  pid_t pid_ = -1;
  std::uint64_t ident_ = 0;
  std::uint32_t native_id_ = 0;
};

class StartingThread : public ::testing::TestWithParam<std::string> {};

TEST_P(StartingThread, IsNamedFromLimboAtEachLookup) {
  const std::string python = GetParam();
  REQUIRE_FILE(python);
  HeldThread held(python);
  ASSERT_GT(held.pid(), 0);
  ASSERT_NE(held.ident(), 0u) << python << " printed no thread ident";
  auto process = PythonProcess::attach(held.pid(), OffsetsTable::embedded());
  auto& names = process->thread_names();
  // The first look-up reads threading's dicts; the next ones come within
  // the retry back-off and the refresh bound, as a burst of events from one
  // starting thread does (GcE2E saw its second collection named
  // "python3.12", the process's name).
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(names.name(held.ident(), held.native_id()).value_or("(none)"), "Starting-1");
  }
}

INSTANTIATE_TEST_SUITE_P(Pythons, StartingThread,
                         ::testing::Values(host::kDebianPython, host::pyenv_python("3.8.18"),
                                           host::pyenv_python("3.12.1"), host::pyenv_python("3.13.0")),
                         [](const auto& info) {
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace pyebpf::python
