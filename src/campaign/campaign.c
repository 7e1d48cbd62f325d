/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A trace store to its summaries to the report, once (campaign.h). */
#include "pfi/campaign.h"

#include <stdio.h>

#include "pfi/trace.h"

int pfi_campaign_report(struct pfi_store *st, const char *out_dir,
                        const struct pfi_report_opts *o,
                        enum pfi_campaign_stage *stage, struct pfi_error *err) {
  enum pfi_campaign_stage dummy;
  if (!stage)
    stage = &dummy;
  *stage = PFI_STAGE_SUMMARIZE;
  int rc = pfi_report_mkdirs(out_dir, err);
  if (rc < 0)
    return rc;
  struct pfi_summary_opts so;
  pfi_summary_opts_init(&so);
  if ((rc = pfi_trace_summarize(st, out_dir, &so, err)) < 0)
    return rc;
  *stage = PFI_STAGE_REPORT;
  if ((rc = pfi_report_build(out_dir, out_dir, o, err)) < 0)
    return rc;
  *stage = PFI_STAGE_NONE;
  return 0;
}
