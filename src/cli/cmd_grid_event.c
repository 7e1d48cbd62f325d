/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid event-report`: one recorded grid event against the tier
 * contract: per job and per tenant compliance, energy shed at the meter,
 * and a page with the target against realized power. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmd_grid.h"
#include "pfi/compliance.h"
#include "pfi/csv.h"
#include "pfi/cluster.h"
#include "pfi/data.h"
#include "pfi/eventlog.h"
#include "pfi/flexcap.h"
#include "pfi/meter.h"
#include "pfi/report.h"

static int load_contract(const char *path, struct pfi_table *t,
                         struct pfi_contract_job **out, size_t *n,
                         struct pfi_error *err) {
  int rc = pfi_table_load(t, path, err);
  if (rc < 0)
    return rc;
  int cj = pfi_table_find(t, "job"), ct = pfi_table_find(t, "tier"),
      cn = pfi_table_find(t, "tenant"), cd = pfi_table_find(t, "deadline_tput");
  if (cj < 0 || ct < 0)
    return pfi_error_setloc(err, PFI_EPARSE, path, 1, 1,
                            "contract: the header must name job and tier "
                            "(optional: tenant, deadline_tput)");
  struct pfi_contract_job *v = calloc(t->nrows + 1, sizeof *v);
  if (!v)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t r = 0; r < t->nrows; r++) {
    v[r].job = pfi_table_cell(t, r, (size_t)cj);
    v[r].tier = pfi_table_cell(t, r, (size_t)ct);
    v[r].tenant = cn >= 0 ? pfi_table_cell(t, r, (size_t)cn) : NULL;
    v[r].deadline_tput = NAN;
    const char *d = cd >= 0 ? pfi_table_cell(t, r, (size_t)cd) : NULL;
    if (d && *d &&
        (rc = pfi_table_double(t, r, (size_t)cd, &v[r].deadline_tput, err)) <
            0) {
      free(v);
      return rc;
    }
    if (!v[r].job || !*v[r].job || !v[r].tier || !*v[r].tier) {
      free(v);
      return pfi_error_setloc(err, PFI_EPARSE, path, t->line[r], 1,
                              "contract: job and tier must not be empty");
    }
  }
  *out = v;
  *n = t->nrows;
  return 0;
}

/* The measured reference beside the emulated event (--phoenix). */
struct reference {
  struct pfi_event ev;   /* Emerald's Phoenix trace, shares of its baseline */
  struct pfi_emerald em; /* its delivered-cut summary */
  struct pfi_delivered dl; /* ours, on the same terms */
  const char *kind;        /* "emulated" or "as logged" */
};

/* One panel with its key, 900 px wide, as an inline SVG in its own <div>
 * (nothing when the figure cannot be drawn: the page goes on without it). */
static void panel_html(struct pfi_html *h, struct pfi_panel *p, int height,
                       const char *id_prefix) {
  p->key = 1;
  struct pfi_figure f = {.width = 900, .height = height, .rows = 1, .cols = 1,
                         .panels = p, .npanels = 1};
  char *svg = NULL;
  struct pfi_error e;
  if (pfi_figure_svg(&f, id_prefix, &svg, &e) == 0 && svg) {
    pfi_html_puts(h, "<div>");
    pfi_html_puts(h, svg);
    pfi_html_puts(h, "</div>");
  }
  free(svg);
}

/* Both deliveries as shares of their own pre-event baseline against the
 * share of the event elapsed, with the target they were asked for. */
static void reference_section(struct pfi_html *h, const struct pfi_eventlog *log,
                              const struct reference *r) {
  size_t ne = log->ev1 - log->ev0, nr = r->ev.n;
  double *x1 = malloc((ne + 1) * sizeof *x1), *y1 = malloc((ne + 1) * sizeof *y1);
  double *x2 = malloc((nr + 1) * sizeof *x2), *y2 = malloc((nr + 1) * sizeof *y2);
  double xt[2] = {0, 100}, yt[2] = {1 - r->dl.asked, 1 - r->dl.asked};
  double span = ne > 1 ? log->t[log->ev1 - 1] - log->t[log->ev0] : 1;
  double rspan = nr > 1 ? r->ev.t_s[nr - 1] - r->ev.t_s[0] : 1;
  pfi_html_puts(h, "<h2>Delivered cut on the same target</h2>");
  pfi_html_textf(h,
                 "Both asked for a cut of %.0f %% of their pre-event draw. "
                 "Measured: Emerald AI's cluster in the Phoenix SRP event, "
                 "2025-05-04 16:10-19:30 (published data, "
                 "data/real/SRP_total_power.csv; baseline the median of "
                 "the first 15 minutes, %.0f W): mean cut %.2f %%, %.0f of "
                 "%.0f minutes above the target. pfi (%s): this event "
                 "(baseline %.1f W): mean cut %.2f %%, %.1f %% of the "
                 "samples above the target.",
                 100 * r->dl.asked, r->em.baseline_w, 100 * r->em.mean_cut,
                 r->em.minutes_above, r->em.minutes, r->kind, log->baseline_w,
                 100 * r->dl.mean_cut, 100 * r->dl.share_above);
  pfi_html_puts(h, "<table><tr><th>delivery</th><th>kind</th><th>length</th>"
                   "<th>asked</th><th>mean cut</th><th>time above target"
                   "</th></tr><tr><td>Emerald AI, Phoenix SRP</td><td>"
                   "measured</td>");
  pfi_html_printf(h,
                  "<td>%.0f min</td><td>%.0f %%</td><td>%.2f %%</td><td>"
                  "%.1f %%</td></tr><tr><td>pfi</td><td>%s</td><td>"
                  "%.0f s</td><td>%.0f %%</td><td>%.2f %%</td><td>%.1f %%"
                  "</td></tr></table>",
                  r->em.minutes, 100 * r->dl.asked, 100 * r->em.mean_cut,
                  r->em.minutes > 0 ? 100 * r->em.minutes_above / r->em.minutes
                                    : 0,
                  r->kind, span, 100 * r->dl.asked, 100 * r->dl.mean_cut,
                  100 * r->dl.share_above);
  if (!x1 || !y1 || !x2 || !y2 || !ne || !nr) {
    free(x1), free(y1), free(x2), free(y2);
    return;
  }
  for (size_t q = 0; q < ne; q++) {
    x1[q] = 100 * (log->t[log->ev0 + q] - log->t[log->ev0]) / span;
    y1[q] = log->power[log->ev0 + q] / log->baseline_w;
  }
  for (size_t q = 0; q < nr; q++) {
    x2[q] = 100 * (r->ev.t_s[q] - r->ev.t_s[0]) / rspan;
    y2[q] = r->ev.frac[q];
  }
  struct pfi_series s[3] = {
      {.title = "target", .x = xt, .y = yt, .n = 2,
       .style = PFI_STYLE_LINES, .color = 1, .dashed = 1},
      {.title = "Emerald AI, Phoenix (measured)", .x = x2, .y = y2, .n = nr,
       .style = PFI_STYLE_LINES, .color = 4},
      {.title = r->kind[0] == 'e' ? "pfi (emulated)" : "pfi (as logged)",
       .x = x1, .y = y1, .n = ne,
       .style = PFI_STYLE_LINES, .color = 2}};
  struct pfi_panel p;
  pfi_panel_init(&p);
  p.title = "Power as a share of the pre-event draw";
  p.xlabel = "% of the event elapsed";
  p.ylabel = "share of baseline";
  p.series = s;
  p.nseries = 3;
  p.key_pos = "bottom right";
  panel_html(h, &p, 360, "ref-");
  free(x1), free(y1), free(x2), free(y2);
}

/* "up to 4 h" or "of any length" for a quote's longest event. */
static void dur_text(char *b, size_t n, double d) {
  if (!isfinite(d))
    snprintf(b, n, "of any length");
  else if (d >= 3600)
    snprintf(b, n, "up to %.4g h", d / 3600);
  else
    snprintf(b, n, "up to %.4g min", d / 60);
}

/* Capacity over time: pfid's live quote at <= shed_loss throughput loss on
 * every sync the bridge logged, with its interval, against the minutes
 * from the event's start (before it: negative). */
static void capacity_section(struct pfi_html *h, const struct pfi_eventlog *log,
                             const struct pfi_compliance *c) {
  if (!log->shed)
    return;
  size_t n = 0;
  double *x = malloc((log->n + 1) * sizeof *x),
         *y = malloc((log->n + 1) * sizeof *y),
         *lo = malloc((log->n + 1) * sizeof *lo),
         *hi = malloc((log->n + 1) * sizeof *hi);
  if (x && y && lo && hi)
    for (size_t r = 0; r < log->n; r++)
      if (!isnan(log->shed[r])) {
        x[n] = (log->t[r] - log->t[log->ev0]) / 60;
        y[n] = log->shed[r];
        lo[n] = log->shed_lo[r];
        hi[n] = log->shed_hi[r];
        n++;
      }
  pfi_html_printf(h, "<h2>Flexible capacity over time</h2>");
  size_t q;
  struct pfi_error e;
  if (n == 0 || pfi_eventlog_quote_at_start(log, &q, &e) < 0) {
    pfi_html_textf(h, "pfid gave no capacity quote at <= %g %% throughput "
                      "loss by the event's start.",
                   100 * log->shed_loss);
  } else {
    char d[64];
    dur_text(d, sizeof d, log->shed_dur[q]);
    pfi_html_puts(h, "<p>");
    pfi_html_textf(h,
                   "pfid's live capacity at <= %g %% throughput loss (GET "
                   "/v1/capacity, logged on every sync): %.1f W (95 %% "
                   "interval %.1f to %.1f W, for an event %s) when the event "
                   "began; the fleet's realized cut was %.1f W (GPU level).",
                   100 * log->shed_loss, log->shed[q], log->shed_lo[q],
                   log->shed_hi[q], d, c->realized_cut_w);
    pfi_html_puts(h, "</p>");
  }
  if (n > 0) {
    char title[96];
    snprintf(title, sizeof title, "shed at <= %g %% loss",
             100 * log->shed_loss);
    struct pfi_series s[3] = {
        {.title = title, .x = x, .y = y, .n = n, .style = PFI_STYLE_LINES,
         .color = 2},
        {.title = "95 % interval", .x = x, .y = lo, .n = n,
         .style = PFI_STYLE_LINES, .color = 4, .dashed = 1},
        {.title = "", .x = x, .y = hi, .n = n, .style = PFI_STYLE_LINES,
         .color = 4, .dashed = 1}};
    struct pfi_panel p;
    pfi_panel_init(&p);
    p.title = "Flexible capacity (pfid's live quote)";
    p.xlabel = "minutes from the event's start";
    p.ylabel = "W (GPU level)";
    p.series = s;
    p.nseries = 3;
    p.key_pos = "top right";
    panel_html(h, &p, 320, "cap-");
  }
  free(x), free(y), free(lo), free(hi);
}

static int write_page(const char *dir, const struct pfi_eventlog *log,
                      const double *meter_w, const struct pfi_compliance *c,
                      const struct pfi_compliance_input *in,
                      const struct reference *ref, struct pfi_error *err) {
  size_t ne = log->ev1 - log->ev0;
  double *x = malloc((ne + 1) * sizeof *x);
  if (!x)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t q = 0; q < ne; q++)
    x[q] = (log->t[log->ev0 + q] - log->t[log->ev0]) / 60;
  struct pfi_series s[3] = {{.title = "target (GPU)",
                             .x = x,
                             .y = in->target_w,
                             .n = ne,
                             .style = PFI_STYLE_LINES,
                             .color = 1,
                             .dashed = 1},
                            {.title = "realized GPU power",
                             .x = x,
                             .y = in->realized_w,
                             .n = ne,
                             .style = PFI_STYLE_LINES,
                             .color = 2},
                            {.title = "power at the meter",
                             .x = x,
                             .y = meter_w,
                             .n = ne,
                             .style = PFI_STYLE_LINES,
                             .color = 3}};
  struct pfi_panel p;
  pfi_panel_init(&p);
  p.title = "Target against realized power";
  p.xlabel = "minutes into the event";
  p.ylabel = "W";
  p.series = s;
  p.nseries = 3;
  p.key = 1;
  p.key_pos = "bottom right";
  struct pfi_figure f = {.width = 900,
                         .height = 420,
                         .rows = 1,
                         .cols = 1,
                         .panels = &p,
                         .npanels = 1};
  char *svg = NULL;
  int rc = pfi_figure_svg(&f, "ev-", &svg, err);
  free(x);
  struct pfi_html h;
  pfi_html_init(&h);
  pfi_html_puts(&h, "<!DOCTYPE html><html><head><meta charset='utf-8'>"
                    "<title>Grid event report</title><style>body{font-family:"
                    "sans-serif;margin:2em}table{border-collapse:collapse}"
                    "td,th{border:1px solid #ccc;padding:2px 8px}.bad{color:"
                    "#b00}</style></head><body><h1>Grid event report</h1>");
  pfi_html_textf(&h,
                 "Event of %.0f s; requested cut %.1f W, realized %.1f W "
                 "(GPU level); %.1f s above target (worst %+.1f W); energy "
                 "shed at the meter %.3f Wh; %d job(s) in violation.",
                 in->event_s, c->requested_cut_w, c->realized_cut_w,
                 c->above_target_s, c->worst_over_w, c->energy_shed_wh,
                 c->violations);
  if (rc == 0 && svg) {
    pfi_html_puts(&h, "<div>");
    pfi_html_puts(&h, svg);
    pfi_html_puts(&h, "</div>");
  } else if (rc < 0) {
    pfi_html_puts(&h, "<p>(figure not drawn: ");
    pfi_html_text(&h, err->msg);
    pfi_html_puts(&h, ")</p>");
    rc = 0;
  }
  free(svg);
  capacity_section(&h, log, c);
  if (ref)
    reference_section(&h, log, ref);
  pfi_html_puts(&h, "<h2>Jobs</h2><table><tr><th>job</th><th>tenant</th>"
                    "<th>tier</th><th>throughput lost</th><th>allowed</th>"
                    "<th>violation</th></tr>");
  for (size_t k = 0; k < c->nj; k++) {
    pfi_html_puts(&h, "<tr><td>");
    pfi_html_text(&h, in->jobs[k].job);
    pfi_html_puts(&h, "</td><td>");
    pfi_html_text(&h, in->jobs[k].tenant ? in->jobs[k].tenant : "");
    pfi_html_puts(&h, "</td><td>");
    pfi_html_text(&h, in->jobs[k].tier);
    pfi_html_printf(&h, "</td><td>%.2f %%</td><td>%.1f %%</td><td%s>",
                    100 * c->job[k].loss, 100 * c->job[k].allowance,
                    c->job[k].violation ? " class='bad'" : "");
    pfi_html_text(&h, c->job[k].violation ? c->job[k].why : "none");
    pfi_html_puts(&h, "</td></tr>");
  }
  pfi_html_puts(&h, "</table><h2>Tenants</h2><table><tr><th>tenant</th>"
                    "<th>jobs</th><th>throughput lost</th><th>violations"
                    "</th></tr>");
  for (size_t k = 0; k < c->ntenant; k++) {
    pfi_html_puts(&h, "<tr><td>");
    pfi_html_text(&h, c->tenant[k].tenant);
    pfi_html_printf(&h, "</td><td>%zu</td><td>%.2f %%</td><td>%d</td></tr>",
                    c->tenant[k].jobs, 100 * c->tenant[k].loss,
                    c->tenant[k].violations);
  }
  pfi_html_puts(&h, "</table><p>Provenance: the power and throughput "
                    "recorded by the bridge from the fleet (emulated GPUs "
                    "when the fleet runs the emulator).</p></body></html>\n");
  if (!pfi_html_ok(&h)) {
    pfi_html_release(&h);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/event.html", dir);
  FILE *fp = fopen(path, "we");
  char *page = pfi_html_detach(&h);
  if (!fp || fputs(page, fp) == EOF || fclose(fp) != 0) {
    free(page);
    return pfi_error_set(err, PFI_EIO, "%s: cannot write: %s", path,
                         strerror(errno));
  }
  free(page);
  return rc;
}

int pfi__grid_event_report(const struct opts *o) {
  if (!o->logdir || !o->contract || !o->tiers || !o->outdir)
    return pfi__grid_usage("event-report: --log DIR, --contract FILE, "
                           "--tiers FILE and --out DIR are required%s",
                           "");
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_meter_config mc;
  if (o->config) {
    if (pfi_meter_config_load(o->config, &mc, &err) < 0)
      return pfi__grid_fail(&err);
  } else
    pfi_meter_config_init(&mc);
  char sp[4200], jp[4200];
  snprintf(sp, sizeof sp, "%s/series.csv", o->logdir);
  snprintf(jp, sizeof jp, "%s/jobs.csv", o->logdir);
  struct pfi_eventlog log;
  struct pfi_table ct;
  memset(&ct, 0, sizeof ct);
  struct pfi_contract_job *contract = NULL, *jobs = NULL;
  struct pfi_tier *tiers = NULL;
  size_t nc = 0, nt = 0;
  double *meter = NULL;
  struct pfi_compliance c;
  memset(&c, 0, sizeof c);
  struct pfi_compliance_input in;
  int status = 0;
  struct reference ref;
  memset(&ref, 0, sizeof ref);
  memset(&log, 0, sizeof log);
  if (pfi_eventlog_load(&log, sp, jp, &err) < 0 ||
      load_contract(o->contract, &ct, &contract, &nc, &err) < 0 ||
      pfi_tiers_load(o->tiers, &tiers, &nt, &err) < 0 ||
      pfi_eventlog_compliance(&log, &mc, o->nodes ? (unsigned)o->nodes : 1,
                              contract, nc, tiers, nt, o->notice, &in, &meter,
                              &jobs, &err) < 0 ||
      pfi_compliance_compute(&in, &c, &err) < 0) {
    status = pfi__grid_fail(&err);
    goto out;
  }
  ref.kind = o->emulated ? "emulated" : "as logged";
  if (o->phoenix) {
    char rp[1024];
    if (pfi_data_path("real/SRP_total_power.csv", rp, sizeof rp, &err) < 0 ||
        pfi_event_srp(&ref.ev, rp, "2025-05-04", "16:10", "19:30", 0.25,
                      &ref.em, &err) < 0 ||
        pfi_eventlog_delivered(&log, 0.25, &ref.dl, &err) < 0) {
      status = pfi__grid_fail(&err);
      goto out;
    }
  }
  if (mkdir(o->outdir, 0755) < 0 && errno != EEXIST) {
    fprintf(stderr, "pfi grid: %s: %s\n", o->outdir, strerror(errno));
    status = PFI_EXIT_FAIL;
    goto out;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/compliance.csv", o->outdir);
  FILE *fp = fopen(path, "we");
  if (fp) {
    fputs("job,tenant,tier,baseline_tput,mean_tput,loss,allowance,violation,"
          "why\n",
          fp);
    for (size_t k = 0; k < c.nj; k++) {
      pfi_cli_put_csv_field(fp, in.jobs[k].job);
      fputc(',', fp);
      pfi_cli_put_csv_field(fp, in.jobs[k].tenant ? in.jobs[k].tenant : "");
      fputc(',', fp);
      pfi_cli_put_csv_field(fp, in.jobs[k].tier);
      fprintf(fp, ",%.9g,%.9g,%.6f,%.6f,%d,", in.jobs[k].baseline_tput,
              c.job[k].mean_tput, c.job[k].loss, c.job[k].allowance,
              c.job[k].violation);
      pfi_cli_put_csv_field(fp, c.job[k].why);
      fputc('\n', fp);
    }
  }
  if (!fp || fclose(fp) != 0) {
    fprintf(stderr, "pfi grid: %s: cannot write\n", path);
    status = PFI_EXIT_FAIL;
    goto out;
  }
  if (write_page(o->outdir, &log, meter, &c, &in, o->phoenix ? &ref : NULL,
                 &err) < 0) {
    status = pfi__grid_fail(&err);
    goto out;
  }
  json_t *t = json_array();
  for (size_t k = 0; k < c.ntenant; k++)
    json_array_append_new(
        t, json_pack("{s:s,s:i,s:f,s:i}", "tenant", c.tenant[k].tenant, "jobs",
                     (int)c.tenant[k].jobs, "loss", c.tenant[k].loss,
                     "violations", c.tenant[k].violations));
  json_t *j = json_pack(
      "{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:o,s:s}", "event_s", in.event_s,
      "baseline_w", in.baseline_w, "requested_cut_w", c.requested_cut_w,
      "realized_cut_w", c.realized_cut_w, "above_target_s", c.above_target_s,
      "worst_over_w", c.worst_over_w, "energy_shed_wh", c.energy_shed_wh,
      "violations", c.violations, "tenants", t, "page", "event.html");
  if (j && o->phoenix)
    json_object_set_new(
        j, "same_target",
        json_pack("{s:f s:{s:s s:s s:b s:f s:f s:f s:f} s:{s:s s:s s:f s:f "
                  "s:I}}",
                  "asked_cut", ref.dl.asked, "emerald", "what",
                  "Emerald AI, Phoenix SRP 2025-05-04 16:10-19:30", "source",
                  "published data: data/real/SRP_total_power.csv",
                  "measured", 1, "baseline_w", ref.em.baseline_w, "mean_cut",
                  ref.em.mean_cut, "minutes", ref.em.minutes,
                  "minutes_above_target", ref.em.minutes_above, "pfi", "what",
                  "this event on the fleet logged", "kind", ref.kind,
                  "mean_cut", ref.dl.mean_cut, "share_above_target",
                  ref.dl.share_above, "samples", (json_int_t)ref.dl.samples));
  size_t q;
  struct pfi_error qe;
  if (j && log.shed && pfi_eventlog_quote_at_start(&log, &q, &qe) == 0)
    json_object_set_new(
        j, "capacity_at_start",
        json_pack("{s:f s:f s:f s:f s:o}", "max_loss", log.shed_loss,
                  "shed_w", log.shed[q], "shed_lo_w", log.shed_lo[q],
                  "shed_hi_w", log.shed_hi[q], "duration_s",
                  isfinite(log.shed_dur[q]) ? json_real(log.shed_dur[q])
                                            : json_null()));
  status = pfi_cli_print_json(j);
out:
  pfi_event_release(&ref.ev);
  pfi_compliance_release(&c);
  pfi_eventlog_release(&log);
  pfi_table_release(&ct);
  free(contract);
  free(jobs);
  free(tiers);
  free(meter);
  return status;
}
