/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The report page: first screen, sections, style and the render check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/report.h"
#include "pfi/version.h"

#include "report_int.h"

static const char style[] =
    "body{font-family:sans-serif;margin:0 auto;max-width:1180px;padding:0 "
    "16px 40px;color:#222;line-height:1.4}\n"
    "h1{font-size:1.6em;margin:18px 0 6px}h2{border-bottom:2px solid "
    "#0072b2;padding-bottom:3px;margin-top:36px}\n"
    ".notice{border:3px solid #d55e00;background:#fff4ec;padding:10px "
    "14px;margin:10px 0;font-size:1.05em}\n"
    ".notice strong{color:#a03f00}\n"
    ".measured{border-color:#009e73;background:#eefaf5}\n"
    "table.res{border-collapse:collapse;margin:0 0 18px;font-size:"
    "0.85em}\n"
    "p.tabcap{font-weight:bold;margin:14px 0 4px}\n"
    "table.res th,table.res td{border:1px solid #ccc;padding:2px 6px}\n"
    "table.res "
    "th{background:#f0f0f0;position:sticky;top:0}td.num{text-align:right;font-"
    "variant-"
    "numeric:tabular-nums}\n"
    "th.pub,td.pub{background:#f3f0fa}th.diff,td.diff{background:#fdf8e6}\n"
    ".file{font-weight:normal;color:#777;font-size:0.9em}\n"
    ".tabwrap{overflow-x:auto;max-height:900px;overflow-y:auto}\n"
    "figure.fig{margin:12px 0 22px}figure.fig svg{max-width:100%;height:auto;"
    "border:1px solid #ddd}\n"
    "figcaption{font-size:0.9em;color:#444;margin-top:4px}\n"
    ".missing{color:#a03f00}.note{color:#666}\n"
    "nav ol{columns:2;font-size:0.95em}#render-check{color:#666;font-size:"
    "0.85em}\n";

/* After load, the browser checks that every figure drew something: the
 * drawing has a size, axis text, and at least one visible mark in a data
 * group. The result is written into the page (attributes and a line of
 * text) so that a headless browser's DOM dump shows it. */
static const char check_script[] =
    "<script>\n"
    "(function(){\n"
    "  var figs=document.querySelectorAll('figure.fig'),ok=0;\n"
    "  for(var i=0;i<figs.length;i++){\n"
    "    var f=figs[i],s=f.querySelector('svg'),good=false,marks=0,texts=0;\n"
    "    if(s){\n"
    "      var b=s.getBoundingClientRect();\n"
    "      var d=s.querySelectorAll('g[id*=\"gnuplot_plot_\"] path,"
    "g[id*=\"gnuplot_plot_\"] use');\n"
    "      for(var k=0;k<d.length;k++){var r=d[k].getBBox();"
    "if(r.width>0||r.height>0)marks++;}\n"
    "      texts=s.querySelectorAll('text').length;\n"
    "      good=b.width>0&&b.height>0&&marks>0&&texts>0;\n"
    "    }\n"
    "    f.setAttribute('data-rendered',good?'yes':'no');\n"
    "    f.setAttribute('data-marks',String(marks));\n"
    "    if(good)ok++;\n"
    "  }\n"
    "  var e=document.getElementById('render-check');\n"
    "  if(e)e.textContent='Render check: '+ok+' of '+figs.length+"
    "' figures drawn.';\n"
    "})();\n"
    "</script>\n";

static void notice(struct pfi__report *r, struct pfi_html *b) {
  if (strcmp(r->source, "measured") == 0) {
    pfi_html_puts(b, "<div class=\"notice measured\" id=\"provenance\">"
                     "<strong>Measured data.</strong> Every curve in this "
                     "report comes from runs recorded on real GPUs (source "
                     "column: measured). Published values from the paper are "
                     "shown beside them, labelled published.</div>\n");
    return;
  }
  int mixed_emu = strcmp(r->source, "mixed") == 0 && r->js.any_emulated;
  if (strcmp(r->source, "emulated") == 0 || mixed_emu) {
    pfi_html_puts(
        b, "<div class=\"notice\" id=\"provenance\"><strong>EMULATED DATA, "
           "NOT MEASUREMENTS.</strong> ");
    if (mixed_emu)
      pfi_html_puts(b, "Some rows of this report's input are emulated and "
                       "some are not (see the source columns of curves.csv "
                       "and features.csv). ");
    pfi_html_puts(
        b, "The emulated curves and telemetry come from pfi's physical model "
           "of H200 and H100 GPUs under a power cap, whose per-job parameters "
           "were calibrated only to the PFI values the paper published. They "
           "are not measurements of any GPU. Agreement with the published "
           "values in kind is the expectation, not in digits; published "
           "numbers appear only beside ours, labelled published.</div>\n");
    return;
  }
  pfi_html_puts(b, "<div class=\"notice\" id=\"provenance\"><strong>"
                   "Provenance not stated.</strong> curves.csv's source "
                   "column is absent or does not say emulated or measured "
                   "(this input is neither an emulated campaign nor a "
                   "recorded sweep as far as pfi can tell).</div>\n");
}

/* For pages other than the paper's (src/report/operator.c). */
const char *pfi__report_style(void) { return style; }
const char *pfi__report_check_script(void) { return check_script; }
void pfi__report_notice(struct pfi__report *r, struct pfi_html *b) {
  notice(r, b);
}

int pfi__report_page(struct pfi__report *r, const char *out_dir) {
  struct pfi_html b;
  pfi_html_init(&b);
  int rc = 0;
  pfi_html_printf(&b,
                  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                  "<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width\">\n"
                  "<meta name=\"generator\" content=\"pfi %s\">\n"
                  "<title>pfi report: power flexibility of %zu groups"
                  "</title>\n<style>\n%s</style>\n</head>\n<body>\n",
                  PFI_VERSION_STRING, r->ng, style);
  pfi_html_puts(&b, "<header id=\"first-screen\">\n<h1>Power Flexibility "
                    "Index report</h1>\n");
  notice(r, &b);
  pfi_html_puts(&b, "<p id=\"what-ran\"><strong>What was run.</strong> ");
  if (r->o->what_ran)
    pfi_html_text(&b, r->o->what_ran);
  size_t n_h200 = 0, n_h100 = 0, n_held = 0, pts = 0;
  for (size_t i = 0; i < r->ng; i++) {
    n_h100 += r->g[i].h100;
    n_h200 += !r->g[i].h100;
    n_held += r->g[i].heldout;
    pts += r->g[i].c->n;
  }
  if (!r->o->what_ran)
    pfi_html_printf(
        &b,
        "The input holds %zu groups (%zu without an @h100 suffix, of "
        "which %zu are the paper's held-out groups; %zu H100) "
        "with %zu runs in all.",
        r->ng, n_h200, n_held, n_h100, pts);
  pfi_html_printf(&b,
                  " Intervals: %zu Monte Carlo draws per group; seed %lu."
                  "</p>\n",
                  r->o->ci_draws ? r->o->ci_draws : (size_t)10000, r->o->seed);
  if (strcmp(r->source, "emulated") == 0)
    pfi_html_puts(
        &b, "<p id=\"calibration-note\"><strong>Read the PFI rows with "
            "care.</strong> The emulated groups' PFI values agree with the "
            "published ones by construction: the emulator's per-job "
            "parameters were calibrated to them. Everything else below "
            "(intervals, statistics, telemetry correlations, prediction, "
            "allocation) was not calibrated and is what the method gives on "
            "the emulated data.</p>\n");
  if (r->headline && r->headline->nrows)
    pfi_rtable_html(r->headline, &b);
  pfi_html_puts(&b, "<nav><ol>\n"
                    "<li><a href=\"#characterization\">Characterization: "
                    "curves and PFI</a></li>\n"
                    "<li><a href=\"#mechanism\">Mechanism: clocks, H100 vs "
                    "H200</a></li>\n"
                    "<li><a href=\"#statistics\">Statistics: classes, grid, "
                    "telemetry</a></li>\n"
                    "<li><a href=\"#prediction\">Predicting PFI</a></li>\n"
                    "<li><a href=\"#allocation\">Allocating a power cut"
                    "</a></li>\n<li><a href=\"#limits\">Limits and files"
                    "</a></li>\n</ol></nav>\n"
                    "<p id=\"render-check\">Render check: not run (the page's "
                    "script is off).</p>\n</header>\n");
  pfi_html_raw(&b, r->body.s ? r->body.s : "", r->body.len);
  pfi_html_puts(
      &b,
      "<section id=\"limits\"><h2>6. Limits and files</h2>\n<p>The paper's "
      "own limits carry over: one node type, 30-minute runs, GPU power only "
      "(no host, network or cooling), few groups, and a simulation that "
      "reuses the curves that defined PFI. Emulated results add the "
      "emulator's: its curves follow a calibrated physical model, so they "
      "are smoother and more regular than measurements.</p>\n<p>Every table "
      "above is also in this directory as NAME.csv and NAME.json (the name "
      "is shown in each caption). The same inputs and seed give the same "
      "bytes.</p>\n</section>\n");
  pfi_html_puts(&b, check_script);
  pfi_html_puts(&b, "</body>\n</html>\n");
  if (!pfi_html_ok(&b)) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/report.html", out_dir);
  FILE *fp = fopen(path, "w");
  if (!fp) {
    rc = pfi_error_set(r->err, PFI_EIO, "%s: %s", path, strerror(errno));
    goto out;
  }
  size_t w = fwrite(b.s, 1, b.len, fp);
  if (fclose(fp) != 0 || w != b.len)
    rc = pfi_error_set(r->err, PFI_EIO, "%s: write failed", path);
out:
  pfi_html_release(&b);
  return rc;
}
