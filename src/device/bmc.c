/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The BMC's DCMI power reading through ipmitool or freeipmi's ipmi-dcmi:
 * fork/exec without a shell, output bounded, a deadline with a kill. See
 * include/pfi/sensor.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pfi/sensor.h"

static const struct {
  const char *name, *package;
  const char *args[4];
} tools[] = {
    [PFI_BMC_IPMITOOL] = {"ipmitool", "ipmitool", {"dcmi", "power", "reading"}},
    [PFI_BMC_IPMI_DCMI] = {"ipmi-dcmi",
                           "freeipmi-tools",
                           {"--get-system-power-statistics"}},
};

const char *pfi_bmc_tool_name(int tool) {
  return tool == PFI_BMC_IPMITOOL    ? "ipmitool"
         : tool == PFI_BMC_IPMI_DCMI ? "ipmi-dcmi"
                                     : "none";
}

static int executable(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* `prog` as given when it has a '/', else the first executable on PATH. */
static int find_program(const char *prog, char *out, size_t n) {
  if (strchr(prog, '/')) {
    if (strlen(prog) >= n || !executable(prog))
      return -1;
    snprintf(out, n, "%s", prog);
    return 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path)
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  while (*path) {
    size_t k = strcspn(path, ":");
    if (k > 0 && k + strlen(prog) + 2 <= n) {
      snprintf(out, n, "%.*s/%s", (int)k, path, prog);
      if (executable(out))
        return 0;
    }
    path += k + (path[k] == ':');
  }
  out[0] = 0;
  return -1;
}

int pfi_bmc_open(const char *spec, struct pfi_bmc *b, struct pfi_error *err) {
  memset(b, 0, sizeof *b);
  b->timeout_s = PFI_BMC_TIMEOUT_S;
  if (!spec || strcmp(spec, "none") == 0)
    return 0;
  int tool = PFI_BMC_NONE;
  const char *prog = NULL;
  for (int t = PFI_BMC_IPMITOOL; t <= PFI_BMC_IPMI_DCMI; t++) {
    size_t k = strlen(tools[t].name);
    if (strncmp(spec, tools[t].name, k) == 0 &&
        (spec[k] == 0 || spec[k] == ':')) {
      tool = t;
      prog = spec[k] ? spec + k + 1 : tools[t].name;
    }
  }
  if (tool == PFI_BMC_NONE || !*prog)
    return pfi_error_set(err, PFI_EINVAL,
                         "BMC reader '%.80s': expected ipmitool, ipmi-dcmi, "
                         "ipmitool:PROGRAM, ipmi-dcmi:PROGRAM or none",
                         spec);
  if (find_program(prog, b->path, sizeof b->path) < 0)
    return pfi_error_set(
        err, PFI_ENOTFOUND, "%s: %.200s (%s; Debian package %s)",
        tools[tool].name, prog,
        strchr(prog, '/') ? "not an executable file" : "not found on PATH",
        tools[tool].package);
  b->tool = tool;
  return 0;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Reaps `pid` by `deadline`; 1 and *status when it exited, 0 when not. */
static int reap_by(pid_t pid, double deadline, int *status) {
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid)
      return 1;
    if (r < 0 && errno != EINTR) {
      *status = 0;
      return 1; /* not ours to wait for any more */
    }
    if (mono_s() >= deadline)
      return 0;
    pause_ms(10);
  }
}

/* The first line of `out` (printable, at most 120 characters). */
static void first_line(const char *out, size_t len, char *buf, size_t n) {
  size_t k = 0, i = 0;
  while (i < len && (out[i] == '\n' || out[i] == ' ' || out[i] == '\r'))
    i++;
  for (; i < len && out[i] != '\n' && k + 1 < n && k < 120; i++)
    buf[k++] = out[i] >= 0x20 && out[i] < 0x7f ? out[i] : '?';
  buf[k] = 0;
}

int pfi_bmc_read(const struct pfi_bmc *b, double *w, struct pfi_error *err) {
  if (b->tool != PFI_BMC_IPMITOOL && b->tool != PFI_BMC_IPMI_DCMI)
    return pfi_error_set(err, PFI_EINVAL, "no BMC reader chosen");
  const char *argv[6] = {b->path};
  for (size_t i = 0; i < 3 && tools[b->tool].args[i]; i++)
    argv[i + 1] = tools[b->tool].args[i];
  char cmd[640];
  snprintf(cmd, sizeof cmd, "%.500s", b->path);
  for (size_t i = 1; argv[i]; i++)
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %s", argv[i]);
  double timeout = b->timeout_s > 0 ? b->timeout_s : PFI_BMC_TIMEOUT_S;

  int out[2], ep[2];
  if (pipe2(out, O_CLOEXEC) != 0)
    return pfi_error_set(err, PFI_EIO, "%s: pipe: %s", cmd, strerror(errno));
  if (pipe2(ep, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return pfi_error_set(err, PFI_EIO, "%s: pipe: %s", cmd, strerror(errno));
  }
  char *buf = malloc(PFI_BMC_OUTPUT_MAX + 1);
  if (!buf) {
    close(out[0]);
    close(out[1]);
    close(ep[0]);
    close(ep[1]);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(out[0]);
    close(out[1]);
    close(ep[0]);
    close(ep[1]);
    free(buf);
    return pfi_error_set(err, PFI_ECHILD, "%s: fork: %s", cmd, strerror(e));
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0)
      dup2(nul, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    execv(b->path, (char *const *)argv);
    int e = errno;
    if (write(ep[1], &e, sizeof e) < 0) {
    }
    _exit(127);
  }
  setpgid(pid, pid);
  close(out[1]);
  close(ep[1]);
  double deadline = mono_s() + timeout;
  int rc = 0, e = 0, status = 0;
  ssize_t r;
  do
    r = read(ep[0], &e, sizeof e);
  while (r < 0 && errno == EINTR);
  close(ep[0]);
  if (r == (ssize_t)sizeof e) {
    waitpid(pid, NULL, 0);
    close(out[0]);
    free(buf);
    return pfi_error_set(err, PFI_ECHILD, "cannot run %s: %s", cmd,
                         strerror(e));
  }

  /* Output until EOF, the bound or the deadline. */
  size_t len = 0;
  int killed = 0;
  for (;;) {
    double left = deadline - mono_s();
    if (left <= 0) {
      rc = pfi_error_set(err, PFI_ECHILD, "%s: no answer within %g s: killed",
                         cmd, timeout);
      killed = 1;
      break;
    }
    struct pollfd pf = {out[0], POLLIN, 0};
    int pr = poll(&pf, 1, (int)(left * 1000) + 1);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      continue; /* the deadline is checked above */
    r = read(out[0], buf + len, PFI_BMC_OUTPUT_MAX + 1 - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break; /* EOF (or an error: what was read is what there is) */
    len += (size_t)r;
    if (len > PFI_BMC_OUTPUT_MAX) {
      rc = pfi_error_set(err, PFI_ERANGE,
                         "%s: more than %d bytes of output: killed", cmd,
                         PFI_BMC_OUTPUT_MAX);
      killed = 1;
      len = PFI_BMC_OUTPUT_MAX;
      break;
    }
  }
  close(out[0]);
  buf[len] = 0;
  if (!killed && !reap_by(pid, deadline, &status)) {
    rc = pfi_error_set(err, PFI_ECHILD, "%s: did not exit within %g s: killed",
                       cmd, timeout);
    killed = 1;
  }
  if (killed) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    /* Bounded even here: a child stuck in the kernel (an IPMI driver
     * call) does not die at once; it is left to be reaped later. */
    reap_by(pid, mono_s() + 1, &status);
  } else if (WIFSIGNALED(status) ||
             (WIFEXITED(status) && WEXITSTATUS(status))) {
    char fl[128];
    first_line(buf, len, fl, sizeof fl);
    if (WIFSIGNALED(status))
      rc = pfi_error_set(err, PFI_ECHILD, "%s: killed by signal %d%s%s%s", cmd,
                         WTERMSIG(status), fl[0] ? " ('" : "", fl,
                         fl[0] ? "')" : "");
    else
      rc = pfi_error_set(err, PFI_ECHILD, "%s: exit status %d%s%s%s", cmd,
                         WEXITSTATUS(status), fl[0] ? " ('" : "", fl,
                         fl[0] ? "')" : "");
  } else {
    struct pfi_error pe;
    pfi_error_clear(&pe);
    rc = pfi_dcmi_parse(buf, len, w, &pe);
    if (rc < 0)
      pfi_error_set(err, rc, "%s: output %s", cmd, pe.msg);
  }
  free(buf);
  return rc;
}
