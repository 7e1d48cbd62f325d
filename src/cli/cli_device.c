/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli_device.h"

#include "../device/params.h"
#include "cli.h"
#include "pfi/emu.h"
#include "pfi/fault.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failure to open NVML as an error of the machine, not of the request
 * (exit 1), that says how to get the emulator instead. Errors in the
 * request itself (bad parameters) are left as they are. */
static int nvml_unavailable(int rc, struct pfi_error *err) {
  char why[PFI_ERROR_MSG_MAX];
  if (rc == PFI_EINVAL || rc == PFI_EPARSE || rc == PFI_ERANGE)
    return rc;
  snprintf(why, sizeof why, "%s",
           strncmp(err->msg, "nvml: ", 6) == 0 ? err->msg + 6 : err->msg);
  return pfi_error_set(err, rc == PFI_ENOTFOUND ? PFI_EUNINIT : rc,
                       "NVML not available: %s; use --backend emu (or "
                       "PFI_BACKEND=emu) for the emulator",
                       why);
}

const char *pfi__cli_backend(const char *backend) {
  const char *env;
  if (backend)
    return backend;
  env = getenv("PFI_BACKEND");
  return env && *env ? env : NULL;
}

int pfi__cli_open_device(const char *cmd, const char *backend,
                         const char *params, struct pfi_device **dev,
                         const char **chosen, struct pfi_error *err) {
  int rc;
  unsigned n = 0;
  *dev = NULL;
  backend = pfi__cli_backend(backend);
  if (backend) {
    rc = pfi_device_open(dev, backend, params, err);
    if (rc == PFI_ENOTFOUND && !pfi_device_backend(backend)) {
      char names[256] = "";
      size_t w = 0;
      for (size_t i = 0; pfi_device_backends[i] && w < sizeof names; i++)
        w += (size_t)snprintf(names + w, sizeof names - w, "%s%s",
                              i ? ", " : "", pfi_device_backends[i]->name);
      return pfi_error_set(err, PFI_EINVAL,
                           "--backend: unknown backend '%s' (expected one of "
                           "%s)",
                           backend, names);
    }
    if (rc < 0 && strcmp(backend, "nvml") == 0)
      return nvml_unavailable(rc, err);
    if (rc < 0)
      return rc;
    *chosen = pfi_device_ops_of(*dev)->name;
    return 0;
  }
  /* No backend named: real GPUs, never the emulator in their place (a
   * script must not believe caps were applied that were not). */
  rc = pfi_device_open(dev, "nvml", NULL, err);
  if (rc == 0)
    rc = pfi_device_count(*dev, &n, err);
  if (rc == 0 && n == 0)
    rc = pfi_error_set(err, PFI_EUNINIT, "nvml: no NVIDIA GPU found");
  if (rc < 0) {
    pfi_device_close(*dev);
    *dev = NULL;
    return nvml_unavailable(rc, err);
  }
  fprintf(stderr, "pfi %s: using the nvml backend (%u GPU%s)\n", cmd, n,
          n == 1 ? "" : "s");
  *chosen = "nvml";
  return 0;
}

int pfi__cli_probe_device(const char *backend, const char *params,
                          struct pfi_error *err) {
  struct pfi_device *dev = NULL;
  const char *chosen = NULL;
  int rc;
  if (!backend || strcmp(backend, "nvml") != 0)
    return 0;
  rc = pfi__cli_open_device("sweep", backend, params, &dev, &chosen, err);
  pfi_device_close(dev);
  return rc;
}

int pfi__cli_parse_gpus(const char *s, unsigned count, unsigned **out,
                        size_t *n, struct pfi_error *err) {
  return pfi__parse_gpu_list(s, count, out, n, err);
}

int pfi__cli_emulated(struct pfi_device *dev, const char *gpu_name) {
  struct pfi_device *inner = pfi_fault_inner(dev);
  const struct pfi_device_ops *ops = pfi_device_ops_of(inner ? inner : dev);
  if (ops && strcmp(ops->name, "emu") == 0)
    return 1;
  return gpu_name && strstr(gpu_name, "(emulated)") != NULL;
}

static void kill_at_hook(const char *stage, size_t ci, void *arg) {
  struct pfi__cli_kill_at *k = arg;
  if (strcmp(stage, k->stage) != 0 || (k->cap >= 0 && (long)ci != k->cap))
    return;
  if (++k->seen >= k->nth) {
    fflush(NULL);
    raise(SIGKILL);
  }
}

int pfi__cli_kill_at_init(struct pfi__cli_kill_at *k,
                          void (**hook)(const char *, size_t, void *),
                          void **arg) {
  memset(k, 0, sizeof *k);
  k->cap = -1;
  k->nth = 1;
  const char *ka = getenv("PFI_SWEEP_KILL_AT");
  if (!ka || !*ka)
    return 0;
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", ka);
  char *c1 = strchr(tmp, ':');
  if (c1) {
    *c1++ = 0;
    char *c2 = strchr(c1, ':');
    if (c2) {
      *c2++ = 0;
      k->nth = atol(c2) > 0 ? atol(c2) : 1;
    }
    k->cap = *c1 ? atol(c1) : -1;
  }
  snprintf(k->stage, sizeof k->stage, "%s", tmp);
  *hook = kill_at_hook;
  *arg = k;
  return 1;
}

void pfi__cli_cap_signals(void (*on_stop)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
  sigaction(SIGXFSZ, &sa, NULL);
}

int pfi__cli_emulate_known(const char *cmd, const char *id) {
  struct pfi_emu_jobs lib;
  struct pfi_error err;
  if (pfi_emu_jobs_load(&lib, NULL, &err) < 0)
    return pfi_cli_fail(&err);
  int found = pfi_emu_job_find(&lib, id) != NULL;
  pfi_emu_jobs_release(&lib);
  if (!found)
    return pfi_cli_usage(cmd,
                         "--emulate: no job '%s' in the job library (pfi "
                         "emulate jobs)",
                         id);
  return 0;
}
