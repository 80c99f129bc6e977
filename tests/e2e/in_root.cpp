// SPDX-License-Identifier: Apache-2.0
// Runs a program in another root directory the two ways production runs
// Python in one, for the end-to-end tests:
//
//   pyebpf_in_root container ROOT -- PROGRAM ARGS...
//     like a container runtime: a new mount and pid namespace, ROOT made the
//     root with pivot_root, a /proc of its own; PROGRAM is pid 1 there.
//   pyebpf_in_root chroot ROOT -- PROGRAM ARGS...
//     a plain chroot in the caller's mount namespace (with the host's /proc
//     mounted at ROOT/proc, as chroot set-ups do), where /proc/PID/maps
//     shows the host's paths.
//
// The program is killed when this launcher dies (the tests kill the launcher).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr long kProcSuperMagic = 0x9fa0;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "pyebpf_in_root: %s: %s\n", what.c_str(), std::strerror(errno));
  _exit(127);
}

void check(int rc, const std::string& what) {
  if (rc != 0) die(what);
}

bool is_proc(const std::string& dir) {
  struct statfs fs {};
  return statfs(dir.c_str(), &fs) == 0 && fs.f_type == kProcSuperMagic;
}

[[noreturn]] void exec(char** argv) {
  execv(argv[0], argv);
  die("exec " + std::string(argv[0]));
}

[[noreturn]] void run_chroot(const std::string& root, char** argv) {
  // Mounted once and left there, like a chroot set-up's fstab line.
  if (!is_proc(root + "/proc")) check(mount("proc", (root + "/proc").c_str(), "proc", 0, nullptr), "mount proc");
  check(chroot(root.c_str()), "chroot " + root);
  check(chdir("/"), "chdir /");
  exec(argv);
}

[[noreturn]] void enter_container(const std::string& root, char** argv) {
  // pid 1 of the new pid namespace, in the new mount namespace.
  check(prctl(PR_SET_PDEATHSIG, SIGKILL), "prctl");
  check(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "make mounts private");
  check(mount(root.c_str(), root.c_str(), nullptr, MS_BIND | MS_REC, nullptr), "bind " + root);
  check(mount("proc", (root + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr), "mount proc");
  check(chdir(root.c_str()), "chdir " + root);
  const char* old_root = ".pyebpf-old-root";
  if (mkdir(old_root, 0700) != 0 && errno != EEXIST) die("mkdir old root");
  check(static_cast<int>(syscall(SYS_pivot_root, ".", old_root)), "pivot_root");
  check(chdir("/"), "chdir /");
  check(umount2("/.pyebpf-old-root", MNT_DETACH), "detach the old root");
  exec(argv);
}

[[noreturn]] void run_container(const std::string& root, char** argv) {
  check(unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) enter_container(root, argv);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || std::string(argv[3]) != "--") {
    std::fprintf(stderr, "usage: pyebpf_in_root container|chroot ROOT -- PROGRAM ARGS...\n");
    return 2;
  }
  const std::string mode = argv[1], root = argv[2];
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (mode == "chroot") run_chroot(root, argv + 4);
  if (mode == "container") run_container(root, argv + 4);
  std::fprintf(stderr, "pyebpf_in_root: unknown mode %s\n", mode.c_str());
  return 2;
}
