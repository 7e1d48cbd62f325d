/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The agent's node power: the emulator's node model, RAPL over the agent's
 * period, or the BMC's reading taken by a thread of its own. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfi/agent.h"
#include "pfi/emu.h"
#include "pfi/meter.h"
#include "pfi/store.h"

struct pfi_node_meter {
  int kind; /* 0 none, 1 emulated, 2 rapl, 3 bmc */
  /* RAPL: the counters at the previous fill. */
  struct pfi_rapl rapl;
  double uj[PFI_RAPL_MAX], uj_t;
  /* BMC: the reader thread and its newest reading. */
  struct pfi_bmc bmc;
  double period_s;
  pthread_t th;
  int started, stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  double w, w_mono;     /* newest reading and when it was taken; NAN none */
  double w_at;          /* the instant it stands for: mid-way through it */
  /* The GPUs' power of the last fills (a ring, the agent's thread only):
   * what the GPUs drew at a reading's instant. */
  double gh_t[64], gh_w[64];
  unsigned gh_n, gh_i;
  unsigned failures;    /* failed readings in a row */
  int err_new;          /* a failure streak not yet reported */
  struct pfi_error err; /* its first failure */
};

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *bmc_loop(void *arg) {
  struct pfi_node_meter *m = arg;
  pthread_mutex_lock(&m->mu);
  while (!m->stop) {
    pthread_mutex_unlock(&m->mu);
    double t0 = mono(), w;
    struct pfi_error e;
    pfi_error_clear(&e);
    int rc = pfi_bmc_read(&m->bmc, &w, &e);
    double t1 = mono();
    pthread_mutex_lock(&m->mu);
    if (rc == 0 && isfinite(w) && w >= 0 && w <= 1e6) {
      m->w = w;
      m->w_mono = t1;
      m->w_at = 0.5 * (t0 + t1);
      m->failures = 0;
    } else if (m->failures++ == 0) {
      if (rc == 0)
        pfi_error_set(&e, PFI_ERANGE, "BMC reading %g W is not a node's", w);
      m->err = e;
      m->err_new = 1;
    }
    /* The next reading a period after this one started (at once when the
     * tool took longer than the period). */
    double next = t0 + m->period_s;
    struct timespec ts;
    ts.tv_sec = (time_t)next;
    ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
    while (!m->stop && mono() < next)
      if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT)
        break;
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

int pfi_node_meter_open(struct pfi_node_meter **out,
                        const struct pfi_node_meter_opts *o,
                        struct pfi_error *err) {
  *out = NULL;
  int rapl = o->powercap && strcmp(o->powercap, "none") != 0;
  int bmc = o->bmc && strcmp(o->bmc, "none") != 0;
  if (rapl && bmc)
    return pfi_error_set(err, PFI_EINVAL,
                         "node power: --powercap %s and --bmc %s: one source "
                         "(the BMC's reading contains the packages)",
                         o->powercap, o->bmc);
  if (bmc && !(o->bmc_period_s >= 1 && o->bmc_period_s <= 3600))
    return pfi_error_set(err, PFI_EINVAL,
                         "node power: BMC period %g s: expected 1..3600",
                         o->bmc_period_s);
  struct pfi_node_meter *m = calloc(1, sizeof *m);
  if (!m)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  m->w = m->w_mono = m->w_at = m->uj_t = NAN;
  int rc;
  if (bmc) {
    if ((rc = pfi_bmc_open(o->bmc, &m->bmc, err)) < 0) {
      free(m);
      return rc;
    }
    m->kind = 3;
    m->period_s = o->bmc_period_s;
    /* A reading that takes longer than the period is not waited for. */
    m->bmc.timeout_s =
        m->period_s < PFI_BMC_TIMEOUT_S ? m->period_s : PFI_BMC_TIMEOUT_S;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&m->th, NULL, bmc_loop, m) != 0) {
      pfi_node_meter_close(m);
      return pfi_error_set(err, PFI_ENOMEM, "node power: no BMC thread");
    }
    m->started = 1;
  } else if (rapl) {
    const char *root = strcmp(o->powercap, "default") == 0 ? NULL : o->powercap;
    if ((rc = pfi_rapl_open(root, &m->rapl, err)) < 0) {
      free(m);
      return rc;
    }
    if (rc == 0 || pfi_rapl_power_w(&m->rapl, m->uj, m->uj, 1) != 0) {
      free(m);
      return pfi_error_set(err, PFI_ENOTFOUND,
                           "node power: --powercap %s: no readable RAPL "
                           "package zone",
                           o->powercap);
    }
    m->kind = 2;
  } else if (o->emulated && !(o->powercap || o->bmc)) {
    /* An explicit "none" turns off the emulated node too. */
    m->kind = 1;
  }
  *out = m;
  return 0;
}

const char *pfi_node_meter_source(const struct pfi_node_meter *m) {
  static const char *const s[] = {"", PFI_NODE_SOURCE_EMULATED,
                                  PFI_NODE_SOURCE_RAPL, PFI_NODE_SOURCE_DCMI};
  return m ? s[m->kind] : "";
}

void pfi_node_meter_fill(struct pfi_node_meter *m,
                         struct pfi_fleet_telemetry *t, double mono_s) {
  t->node_w = -1;
  t->node_source[0] = 0;
  t->node_age_s = 0;
  if (!m || !m->kind)
    return;
  double gpu = 0;
  int gpu_ok = 1;
  for (unsigned i = 0; i < t->n; i++) {
    if (t->gpu[i].power_w >= 0 && isfinite(t->gpu[i].power_w))
      gpu += t->gpu[i].power_w;
    else
      gpu_ok = 0;
  }
  double w = NAN, age = 0;
  if (m->kind == 1) {
    if (gpu_ok)
      w = gpu + pfi_emu_node_other_w(t->n, gpu);
  } else if (m->kind == 2) {
    double uj[PFI_RAPL_MAX];
    struct pfi_error e;
    if (pfi_rapl_read(&m->rapl, uj, &e) < 0) {
      m->uj_t = NAN; /* the next interval starts at the next good reading */
      return;
    }
    double other = isfinite(m->uj_t) && mono_s > m->uj_t
                       ? pfi_rapl_power_w(&m->rapl, m->uj, uj, mono_s - m->uj_t)
                       : NAN;
    memcpy(m->uj, uj, m->rapl.n * sizeof *uj);
    m->uj_t = mono_s;
    if (gpu_ok && isfinite(other) && other >= 0)
      w = gpu + other;
  } else {
    if (gpu_ok) {
      m->gh_t[m->gh_i] = mono_s;
      m->gh_w[m->gh_i] = gpu;
      m->gh_i = (m->gh_i + 1) % 64;
      if (m->gh_n < 64)
        m->gh_n++;
    }
    double at;
    pthread_mutex_lock(&m->mu);
    w = m->w;
    at = m->w_at;
    age = mono_s - m->w_mono;
    pthread_mutex_unlock(&m->mu);
    /* The reading was the GPUs of its instant plus the rest of the node:
     * the rest now counts with the GPUs' power of this fill (a cut shows
     * at once, not at the next reading up to a period later, which read
     * as other power the GPUs no longer draw). The GPUs at its instant:
     * the newest fill at or before it; none kept (the first reading, a
     * ring outrun): the reading as it is. */
    double best = -INFINITY, g_at = NAN;
    for (unsigned k = 0; k < m->gh_n; k++)
      if (m->gh_t[k] <= at && m->gh_t[k] > best) {
        best = m->gh_t[k];
        g_at = m->gh_w[k];
      }
    if (gpu_ok && isfinite(w) && isfinite(g_at))
      w = gpu + (w > g_at ? w - g_at : 0);
    if (!(age >= 0))
      age = 0;
    /* A reading older than 3 periods (a BMC that stopped answering) is not
     * the node's power any more. */
    if (!(age <= 3 * m->period_s))
      w = NAN;
  }
  if (!(isfinite(w) && w >= 0 && w <= 1e6))
    return;
  t->node_w = w;
  t->node_age_s = age;
  snprintf(t->node_source, sizeof t->node_source, "%s",
           pfi_node_meter_source(m));
}

int pfi_node_meter_error(struct pfi_node_meter *m, struct pfi_error *err) {
  if (!m || m->kind != 3)
    return 0;
  pthread_mutex_lock(&m->mu);
  int r = m->err_new;
  if (r && err)
    *err = m->err;
  m->err_new = 0;
  pthread_mutex_unlock(&m->mu);
  return r;
}

void pfi_node_meter_close(struct pfi_node_meter *m) {
  if (!m)
    return;
  if (m->kind == 3) {
    if (m->started) {
      pthread_mutex_lock(&m->mu);
      m->stop = 1;
      pthread_cond_signal(&m->cv);
      pthread_mutex_unlock(&m->mu);
      pthread_join(m->th, NULL); /* a reading in flight: at most its timeout */
    }
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
  }
  free(m);
}
