/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * measure OUT CMD [ARG...]: runs CMD (no shell) with this process's
 * standard streams, waits for it and writes "WALL_S CPU_S PEAK_RSS_KIB" to
 * OUT, then exits with CMD's status (128 + signal when a signal ended it).
 *
 * bench/compare.py runs every command through this small program: the
 * kernel carries the largest resident size of the process image a command
 * was exec'd from into the command's own peak (getrusage's ru_maxrss), so a
 * command started straight from the Python interpreter reports at least the
 * interpreter's size. Started from here, the carried-over image is this
 * program's (about a MiB).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: measure OUT CMD [ARG...]\n");
    return 2;
  }
  FILE *out = fopen(argv[1], "w");
  if (!out) {
    fprintf(stderr, "measure: %s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "measure: fork: %s\n", strerror(errno));
    return 2;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    fprintf(stderr, "measure: %s: %s\n", argv[2], strerror(errno));
    _exit(127);
  }
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "measure: wait: %s\n", strerror(errno));
      return 2;
    }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  fprintf(out, "%.6f %.6f %ld\n", wall, cpu, ru.ru_maxrss);
  if (fclose(out) != 0) {
    fprintf(stderr, "measure: %s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
