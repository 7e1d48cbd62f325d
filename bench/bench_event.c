/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A grid event on the emulated cluster (EMULATED), closed loop: wall time
 * and the measures of docs/control.md for the controller and equal-weight
 * cuts. Usage: bench_event [NODES [HOURS [SEEDS [SHARE]]]] (defaults 125
 * nodes x 8 GPUs, 3 h, 1 seed, 75 %).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pfi/cluster.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  unsigned nodes = argc > 1 ? (unsigned)atoi(argv[1]) : 125;
  double hours = argc > 2 ? atof(argv[2]) : 3.0;
  int seeds = argc > 3 ? atoi(argv[3]) : 1;
  const char *share = argc > 4 ? argv[4] : "75%";
  for (int sd = 1; sd <= seeds; sd++) {
    struct pfi_cluster_config cc;
    pfi_cluster_config_init(&cc);
    cc.nodes = nodes;
    cc.seed = (unsigned long)sd;
    struct pfi_event tg;
    struct pfi_error err;
    if (pfi_event_parse(&tg, share, 900, 60, hours * 3600, &err) < 0) {
      fprintf(stderr, "%s\n", err.msg);
      return 2;
    }
    struct pfi_run_result r[2];
    double w[2];
    for (int s = 0; s < 2; s++) {
      double t0 = now();
      if (pfi_run_closed_loop(&cc, NULL, NULL, &tg, 1200,
                              s ? PFI_RUN_EQUAL : PFI_RUN_CONTROLLER, NULL,
                              NULL, &r[s], &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
      }
      w[s] = now() - t0;
    }
    for (int s = 0; s < 2; s++)
      printf("seed %d %-10s wall %.1fs within1 %.4f above1 %.0fs above %.0fs "
             "mean %.4f p99 %.4f ttt %.0f peak/base %.4f rec %.0fs tokens "
             "%.4e oracle %.4e chg/gpuh %.1f rec %zu anom %zu rb %zu "
             "tierv %zu\n",
             sd, s ? "equal" : "controller", w[s], r[s].within_1pct,
             r[s].secs_above_1pct, r[s].secs_above, r[s].track_mean,
             r[s].track_p99, r[s].time_to_target_s,
             r[s].recovery_peak_w / r[s].baseline_w, r[s].recovery_s,
             r[s].tokens_event, r[s].tokens_oracle, r[s].cap_changes_per_gpu_h,
             r[s].records, r[s].anomalies, r[s].rollbacks,
             r[s].tier_violations);
    /* In the objective's value (the default, work; docs/control.md). */
    double gap = r[0].value_oracle - r[1].value_event;
    double gap10 = r[0].value_oracle_after10 - r[1].value_after10;
    printf("seed %d gap closed (work) %.3f after 10 min %.3f\n", sd,
           (r[0].value_event - r[1].value_event) / gap,
           (r[0].value_after10 - r[1].value_after10) / gap10);
    pfi_event_release(&tg);
  }
  return 0;
}
