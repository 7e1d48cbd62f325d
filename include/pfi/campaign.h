/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The campaign module (src/campaign/): the one place that joins the
 * pipeline's stages. A trace store (store.h) is summarized (trace.h:
 * curves.csv, features.csv, mechanism.csv) and the summaries are analysed
 * into the report (report.h); `pfi reproduce` (reproduce.h) first sweeps
 * the emulator (emu.h, sweep.h) into the store. The stages themselves do
 * not call each other: the report reads only the summaries' files, the
 * summaries only the store.
 */
#ifndef PFI_CAMPAIGN_H
#define PFI_CAMPAIGN_H

#include "pfi/error.h"
#include "pfi/report.h"
#include "pfi/store.h"

/* Which stage of pfi_campaign_report() failed. */
enum pfi_campaign_stage {
  PFI_STAGE_NONE = 0,
  PFI_STAGE_SUMMARIZE, /* the summaries of the store */
  PFI_STAGE_REPORT     /* the analysis and the page */
};

/*
 * Summarizes the store `st` into `out_dir` (created with its parents) and
 * builds the report there from those summaries (pfi_report_build with
 * options `o`, NULL: the defaults). Returns 0 or the first error;
 * *stage (may be NULL) says which stage failed.
 */
int pfi_campaign_report(struct pfi_store *st, const char *out_dir,
                        const struct pfi_report_opts *o,
                        enum pfi_campaign_stage *stage, struct pfi_error *err);

#endif
