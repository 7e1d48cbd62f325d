/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The BMC's DCMI power reading (pfi_bmc_open, pfi_bmc_read) against fake
 * `ipmitool` and `ipmi-dcmi` programs written here: the tools' documented
 * output (ipmitool(1) "dcmi power reading", ipmi-dcmi(8)
 * "--get-system-power-statistics"), each fake checking the arguments it
 * is given, and hostile ones: garbage, a value that is not N Watts, huge
 * and endless output, a hang, a program that closes its output and runs
 * on, a non-zero exit, a signal, a program that cannot be run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "pfi/meter.h"

static char dir[256];

/* Writes an executable shell script `name` in dir with `body`. */
static void script(const char *name, const char *body) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  assert_int_equal(chmod(p, 0755), 0);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "%s/pfi-bmc-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Opens `tool:dir/name` and reads it; returns the code, *w, the message. */
static int run(const char *tool, const char *name, double timeout, double *w,
               struct pfi_error *err) {
  char spec[600];
  snprintf(spec, sizeof spec, "%s:%s/%s", tool, dir, name);
  struct pfi_bmc b;
  int rc = pfi_bmc_open(spec, &b, err);
  if (rc < 0)
    return rc;
  if (timeout > 0)
    b.timeout_s = timeout;
  return pfi_bmc_read(&b, w, err);
}

static void test_documented(void **state) {
  (void)state;
  struct pfi_error err;
  double w = -1;
  /* ipmitool(1), "dcmi power reading" (the arguments checked). */
  script("ipmitool",
         "[ \"$*\" = 'dcmi power reading' ] || { echo \"args: $*\"; exit 3; }\n"
         "cat <<'E'\n\n"
         "    Instantaneous power reading:                   386 Watts\n"
         "    Minimum during sampling period:                 92 Watts\n"
         "    Maximum during sampling period:                530 Watts\n"
         "    Average power reading over sample period:      371 Watts\n"
         "    IPMI timestamp:                           Tue Dec  1 14:00:00 "
         "2026\n"
         "    Sampling period:                          00000001 Seconds.\n"
         "    Power reading state is:                   activated\n\nE");
  assert_int_equal(run("ipmitool", "ipmitool", 0, &w, &err), 0);
  ASSERT_NEAR(w, 386, 0);
  /* ipmi-dcmi(8), "--get-system-power-statistics". */
  script("ipmi-dcmi",
         "[ \"$*\" = '--get-system-power-statistics' ] || { echo \"args: $*\"; "
         "exit 3; }\n"
         "cat <<'E'\n"
         "Current Power                        : 1204 Watts\n"
         "Minimum Power over sampling duration : 640 watts\n"
         "Maximum Power over sampling duration : 1890 watts\n"
         "Average Power over sampling duration : 1187 watts\n"
         "Time Stamp                           : 12/01/2026 - 14:00:00\n"
         "Statistics reporting time period     : 1000 milliseconds\n"
         "Power Measurement                    : Active\nE");
  assert_int_equal(run("ipmi-dcmi", "ipmi-dcmi", 0, &w, &err), 0);
  ASSERT_NEAR(w, 1204, 0);
  /* The wrong tool's arguments: the fake's exit status 3, its line. */
  assert_int_equal(run("ipmitool", "ipmi-dcmi", 0, &w, &err), PFI_ECHILD);
  assert_non_null(
      strstr(err.msg, "exit status 3 ('args: dcmi power reading')"));

  /* Searched on PATH; a missing tool names its Debian package. */
  char *old = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  char path[1200];
  snprintf(path, sizeof path, "%s:%s", dir, old);
  setenv("PATH", path, 1);
  struct pfi_bmc b;
  assert_int_equal(pfi_bmc_open("ipmitool", &b, &err), 0);
  char want[512];
  snprintf(want, sizeof want, "%s/ipmitool", dir);
  assert_string_equal(b.path, want);
  assert_int_equal(b.tool, PFI_BMC_IPMITOOL);
  assert_int_equal(pfi_bmc_read(&b, &w, &err), 0);
  ASSERT_NEAR(w, 386, 0);
  snprintf(path, sizeof path, "%s/none-here", dir);
  setenv("PATH", path, 1);
  assert_int_equal(pfi_bmc_open("ipmi-dcmi", &b, &err), PFI_ENOTFOUND);
  assert_non_null(strstr(err.msg, "not found on PATH"));
  assert_non_null(strstr(err.msg, "freeipmi-tools"));
  assert_int_equal(pfi_bmc_open("ipmitool", &b, &err), PFI_ENOTFOUND);
  assert_non_null(strstr(err.msg, "Debian package ipmitool"));
  setenv("PATH", old, 1);
  free(old);
  /* Not an executable file; an unknown tool; none. */
  snprintf(path, sizeof path, "ipmitool:%s", dir);
  assert_int_equal(pfi_bmc_open(path, &b, &err), PFI_ENOTFOUND);
  assert_int_equal(pfi_bmc_open("ipmiutil", &b, &err), PFI_EINVAL);
  assert_int_equal(pfi_bmc_open("ipmitool:", &b, &err), PFI_EINVAL);
  assert_int_equal(pfi_bmc_open("none", &b, &err), 0);
  assert_int_equal(b.tool, PFI_BMC_NONE);
  assert_int_equal(pfi_bmc_read(&b, &w, &err), PFI_EINVAL);
}

static void test_hostile(void **state) {
  (void)state;
  struct pfi_error err;
  double w = -7;
  /* Garbage: no reading, the line count and the first line named. */
  script("garbage", "printf 'Get Power Reading\\001 failed\\nnothing\\n'");
  assert_int_equal(run("ipmitool", "garbage", 0, &w, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "in 2 line(s) of output, the first "
                                  "'Get Power Reading? failed'"));
  /* A reading that is not N Watts: its line named. */
  script("notwatts", "printf '\\n    Instantaneous power reading:   n/a "
                     "Watts\\n    Power reading state is: activated\\n'");
  assert_int_equal(run("ipmitool", "notwatts", 0, &w, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "line 2: 'Instantaneous power reading:   "
                                  "n/a Watts'"));
  script("negative", "echo 'Current Power : -5 Watts'");
  assert_int_equal(run("ipmi-dcmi", "negative", 0, &w, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "line 1:"));
  /* The BMC says power measurement is off: freeipmi prints a 0 W reading
   * and the state after it, ipmitool the state last: not a reading. */
  script("off", "echo 'Current Power                        : 0 Watts'\n"
                "echo 'Power Measurement                    : Deactivated'");
  assert_int_equal(run("ipmi-dcmi", "off", 0, &w, &err), PFI_ENOTSUP);
  assert_non_null(strstr(err.msg, "line 2: the BMC's DCMI power measurement "
                                  "is deactivated"));
  script("off2", "echo '    Instantaneous power reading:  0 Watts'\n"
                 "echo '    Power reading state is:       deactivated'");
  assert_int_equal(run("ipmitool", "off2", 0, &w, &err), PFI_ENOTSUP);
  /* Non-zero exit, with its first line (the reading is not used). */
  script("fails",
         "echo 'Error: Unable to establish IPMI v2 / RMCP+ session' >&2\n"
         "echo 'Instantaneous power reading: 300 Watts'\nexit 1");
  w = -7;
  assert_int_equal(run("ipmitool", "fails", 0, &w, &err), PFI_ECHILD);
  assert_non_null(strstr(err.msg, "exit status 1 ('Error: Unable to "
                                  "establish IPMI v2 / RMCP+ session')"));
  ASSERT_NEAR(w, -7, 0);
  /* Killed by a signal. */
  script("signalled", "kill -9 $$");
  assert_int_equal(run("ipmitool", "signalled", 0, &w, &err), PFI_ECHILD);
  assert_non_null(strstr(err.msg, "killed by signal 9"));
  /* Cannot be run (its interpreter does not exist). */
  char p[512];
  snprintf(p, sizeof p, "%s/badinterp", dir);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs("#!/nonexistent/interpreter\n", f);
  fclose(f);
  assert_int_equal(chmod(p, 0755), 0);
  assert_int_equal(run("ipmitool", "badinterp", 0, &w, &err), PFI_ECHILD);
  assert_non_null(strstr(err.msg, "cannot run"));
  /* Huge output, finite (1 MiB then a reading) and endless: killed at the
   * bound, not parsed. */
  script("huge", "head -c 1048576 /dev/zero | tr '\\0' x\n"
                 "echo 'Current Power : 1 Watts'");
  assert_int_equal(run("ipmi-dcmi", "huge", 0, &w, &err), PFI_ERANGE);
  assert_non_null(strstr(err.msg, "more than 65536 bytes of output"));
  script("endless", "exec yes 'Current Power : 1 Watts'");
  assert_int_equal(run("ipmi-dcmi", "endless", 0, &w, &err), PFI_ERANGE);
  /* A hang: killed at the deadline, and reaped (the shell's pid is gone
   * once the call returns). */
  char pidf[512];
  snprintf(pidf, sizeof pidf, "%s/hang.pid", dir);
  char body[700];
  snprintf(body, sizeof body, "echo $$ > '%s'\nsleep 1000\necho never", pidf);
  script("hang", body);
  assert_int_equal(run("ipmitool", "hang", 0.3, &w, &err), PFI_ECHILD);
  assert_non_null(strstr(err.msg, "no answer within 0.3 s: killed"));
  f = fopen(pidf, "r");
  assert_non_null(f);
  long pid = 0;
  assert_int_equal(fscanf(f, "%ld", &pid), 1);
  fclose(f);
  assert_true(pid > 0);
  errno = 0;
  assert_int_equal(kill((pid_t)pid, 0), -1);
  assert_int_equal(errno, ESRCH);
  /* Output closed, program running on: killed at the deadline. */
  script("closes", "echo 'Current Power : 9 Watts'\nexec >&- 2>&-\n"
                   "exec sleep 1000");
  assert_int_equal(run("ipmi-dcmi", "closes", 0.3, &w, &err), PFI_ECHILD);
  assert_non_null(strstr(err.msg, "did not exit within 0.3 s: killed"));
  /* A background child holding the output open: the group is killed. */
  script("holds", "sleep 1000 &\necho 'Current Power : 9 Watts'");
  assert_int_equal(run("ipmi-dcmi", "holds", 0.3, &w, &err), PFI_ECHILD);
  assert_non_null(strstr(err.msg, "no answer within 0.3 s"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_documented),
      cmocka_unit_test(test_hostile),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
