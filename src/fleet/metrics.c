/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Prometheus text exposition of the agent's state. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/agent.h"
#include "pfi/control.h"
#include "pfi/fleet.h"

void pfi_buf_printf(struct pfi_buf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = 1;
      return;
    }
    if (b->s && (size_t)k < room) {
      b->len += (size_t)k;
      return;
    }
    size_t nc = b->cap ? b->cap * 2 : 4096;
    while (nc < b->len + (size_t)k + 1)
      nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
}

void pfi_buf_release(struct pfi_buf *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

void pfi_buf_label(struct pfi_buf *b, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      pfi_buf_printf(b, "\\%c", *v);
    else if (*v == '\n')
      pfi_buf_printf(b, "\\n");
    else
      pfi_buf_printf(b, "%c", *v);
  }
}

static void head(struct pfi_buf *b, const char *name, const char *type,
                 const char *help) {
  pfi_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gpu_labels(struct pfi_buf *b, const char *node, unsigned i,
                       const struct pfi_fleet_gpu *g) {
  pfi_buf_printf(b, "{node=\"%s\",gpu=\"%u\",uuid=\"", node, i);
  pfi_buf_label(b, g->uuid);
  pfi_buf_printf(b, "\"}");
}

void pfi_fleet_metrics_agent(struct pfi_buf *b,
                             const struct pfi_fleet_telemetry *t,
                             const struct pfi_agent_stats *s) {
  static const struct {
    const char *name, *help;
    int what;
  } g[] = {
      {"pfi_gpu_power_limit_watts", "Power limit read back from the GPU.", 0},
      {"pfi_gpu_power_limit_enforced_watts",
       "Enforced power limit (the lowest of every limiter).", 1},
      {"pfi_gpu_power_limit_requested_watts",
       "Power limit the controller assigned (absent when none).", 2},
      {"pfi_gpu_power_watts", "Board power draw.", 3},
  };
  for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
    head(b, g[k].name, "gauge", g[k].help);
    for (unsigned i = 0; i < t->n; i++) {
      const struct pfi_fleet_gpu *u = &t->gpu[i];
      double v = g[k].what == 0   ? u->cap_mw / 1000.0
                 : g[k].what == 1 ? u->enforced_mw / 1000.0
                 : g[k].what == 2 ? u->assigned_mw / 1000.0
                                  : u->power_w;
      if ((g[k].what == 2 && !u->assigned_mw) || (g[k].what == 3 && v < 0))
        continue;
      pfi_buf_printf(b, "%s", g[k].name);
      gpu_labels(b, t->node, i, u);
      pfi_buf_printf(b, " %.17g\n", v);
    }
  }
  head(b, "pfi_job_throughput_tokens_per_second", "gauge",
       "Newest throughput a job on this node reported.");
  for (unsigned j = 0; j < t->n_jobs; j++)
    if (t->job[j].tokens_per_s >= 0)
      pfi_buf_printf(b,
                     "pfi_job_throughput_tokens_per_second{node=\"%s\","
                     "job=\"%s\"} %.17g\n",
                     t->node, t->job[j].id, t->job[j].tokens_per_s);
  head(b, "pfi_node_power_watts", "gauge",
       "The node's measured power (its GPUs included), by source.");
  if (t->node_w >= 0 && t->node_source[0])
    pfi_buf_printf(b, "pfi_node_power_watts{node=\"%s\",source=\"%s\"} %.17g\n",
                   t->node, t->node_source, t->node_w);
  head(b, "pfi_agent_assignment_sequence", "gauge",
       "Newest assignment sequence number seen.");
  pfi_buf_printf(b, "pfi_agent_assignment_sequence{node=\"%s\"} %llu\n",
                 t->node, (unsigned long long)s->seq);
  head(b, "pfi_agent_mode", "gauge",
       "1 for the agent's mode: idle, tracking or hold.");
  for (int m = PFI_AGENT_IDLE; m <= PFI_AGENT_HOLD; m++)
    pfi_buf_printf(b, "pfi_agent_mode{node=\"%s\",mode=\"%s\"} %d\n", t->node,
                   pfi_agent_mode_name(m), s->mode == (enum pfi_agent_mode)m);
  static const struct {
    const char *name, *help;
  } c[] = {
      {"pfi_agent_assignments_applied_total", "Assignments applied."},
      {"pfi_agent_assignments_ignored_total",
       "Old or replayed assignments ignored."},
      {"pfi_agent_assignments_rejected_total",
       "Malformed or unfit assignments rejected."},
      {"pfi_agent_reapplied_total",
       "Power limits re-applied after they drifted."},
      {"pfi_agent_restores_total", "Restores of the recorded limits."},
  };
  head(b, "pfi_agent_tput_stale_jobs", "gauge",
       "Jobs whose throughput file's newest line is older than "
       "--tput-max-age (reported with no throughput).");
  pfi_buf_printf(b, "pfi_agent_tput_stale_jobs{node=\"%s\"} %u\n", t->node,
                 s->tput_stale_jobs);
  head(b, "pfi_agent_tput_stale_reads_total", "counter",
       "Reads of a job's throughput file whose newest line was too old.");
  pfi_buf_printf(b, "pfi_agent_tput_stale_reads_total{node=\"%s\"} %u\n",
                 t->node, s->tput_stale);
  head(b, "pfi_agent_cannot_record", "gauge",
       "1 while the agent cannot write its local record (cuts only).");
  pfi_buf_printf(b, "pfi_agent_cannot_record{node=\"%s\"} %d\n", t->node,
                 s->cannot_record);
  unsigned v[] = {s->applied, s->ignored, s->rejected, s->reapplied,
                  s->restores};
  for (size_t k = 0; k < 5; k++) {
    head(b, c[k].name, "counter", c[k].help);
    pfi_buf_printf(b, "%s{node=\"%s\"} %u\n", c[k].name, t->node, v[k]);
  }
}

void pfi_fleet_metrics_jobs(struct pfi_buf *b, const struct pfi_ctl *ctl,
                            const char *const *ids, size_t n) {
  struct pfi_ctl_belief *bel = calloc(n ? n : 1, sizeof *bel);
  int *ok = calloc(n ? n : 1, sizeof *ok);
  if (!bel || !ok) {
    b->oom = 1;
    free(bel);
    free(ok);
    return;
  }
  for (size_t i = 0; ctl && i < n; i++) {
    int slot = pfi_ctl_job_find(ctl, ids[i]);
    ok[i] = slot >= 0 && pfi_ctl_job_belief(ctl, slot, &bel[i], NULL) == 0;
  }
  head(b, "pfi_job_power_flexibility_index", "gauge",
       "The controller's believed PFI of the job over its power range (its "
       "prior until learned points replace it).");
  for (size_t i = 0; i < n; i++)
    if (ok[i] && isfinite(bel[i].pfi)) {
      pfi_buf_printf(b, "pfi_job_power_flexibility_index{job=\"");
      pfi_buf_label(b, ids[i]);
      pfi_buf_printf(b, "\"} %.17g\n", bel[i].pfi);
    }
  head(b, "pfi_job_learned_points", "gauge",
       "Power-throughput points the controller learned from the job.");
  for (size_t i = 0; i < n; i++)
    if (ok[i]) {
      pfi_buf_printf(b, "pfi_job_learned_points{job=\"");
      pfi_buf_label(b, ids[i]);
      pfi_buf_printf(b, "\"} %zu\n", bel[i].npoints);
    }
  free(bel);
  free(ok);
}
