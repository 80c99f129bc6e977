// SPDX-License-Identifier: Apache-2.0
// A target that is not a Python but maps files named like libpython, the way
// a broken or hostile process could (a ctypes-free C program: a Python host
// would itself be the interpreter pyebpf finds). pyebpf must refuse it,
// naming each file and why it is not an interpreter.
// argv: the files to map. Prints "READY" once they are mapped, then waits for
// stdin to close.
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0 ||
        mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
      perror(argv[i]);
      return 1;
    }
    close(fd);
  }
  puts("READY");
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}
