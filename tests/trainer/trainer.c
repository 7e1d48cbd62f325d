/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pfi-test-trainer: a stand-in for a training job, for the sweep tests. It
 * does no training. It reads its power cap from PFI_CAP_W (as pfi sweep
 * sets it), asks the emulator what throughput the job-library group
 * PFI_EMULATE (or --group) reaches at that cap (pfi_emu_run_rate), and
 * reports its progress the way docs/throughput-protocol.md asks a real job
 * to: one JSON line per step with "elapsed_s", cumulative "tokens", "step"
 * and "loss", or with --stdout a log line "step N tokens_per_s=X" on
 * standard output. Steps follow the emulated run's timeline: none before
 * training starts, none during the evaluation and the checkpoint write.
 * The output is EMULATED.
 *
 * It writes its whole run as fast as it can (job time, not wall time) and
 * exits 0, unless told otherwise:
 *   --crash-at S      exit with status 3 once job time reaches S seconds
 *   --hang            after writing, wait for a signal (SIGTERM ends it)
 *   --ignore-term     ignore SIGTERM too (the harness must SIGKILL it)
 *   --every N         report every N-th step only (default 1)
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/emu.h"

static void usage(void) {
  fputs("usage: pfi-test-trainer [--group G] [--out PATH | --stdout]\n"
        "       [--crash-at S] [--hang] [--ignore-term] [--every N]\n",
        stderr);
}

int main(int argc, char **argv) {
  const char *group = getenv("PFI_EMULATE");
  const char *out = getenv("PFI_THROUGHPUT_JSONL");
  int to_stdout = 0, hang = 0, ignore_term = 0;
  double crash_at = -1;
  long every = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
      group = argv[++i];
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--stdout") == 0)
      to_stdout = 1;
    else if (strcmp(argv[i], "--crash-at") == 0 && i + 1 < argc)
      crash_at = atof(argv[++i]);
    else if (strcmp(argv[i], "--hang") == 0)
      hang = 1;
    else if (strcmp(argv[i], "--ignore-term") == 0)
      ignore_term = hang = 1;
    else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
      every = atol(argv[++i]) > 0 ? atol(argv[i]) : 1;
    else {
      usage();
      return 2;
    }
  }
  const char *cap_s = getenv("PFI_CAP_W");
  const char *dur_s = getenv("PFI_DURATION_S");
  const char *seed_s = getenv("PFI_SEED");
  if (!group || !cap_s || (!out && !to_stdout)) {
    fprintf(stderr, "pfi-test-trainer: needs PFI_CAP_W, a group "
                    "(PFI_EMULATE or --group) and --out or --stdout\n");
    return 2;
  }
  double cap = atof(cap_s);
  double duration = dur_s ? atof(dur_s) : 1800;
  unsigned long seed =
      seed_s ? strtoul(seed_s, NULL, 10) : PFI_EMU_DEFAULT_SEED;
  struct pfi_emu_jobs lib;
  struct pfi_error err;
  if (pfi_emu_jobs_load(&lib, NULL, &err) < 0) {
    fprintf(stderr, "pfi-test-trainer: %s\n", err.msg);
    return 1;
  }
  const struct pfi_emu_job *job = pfi_emu_job_find(&lib, group);
  if (!job) {
    fprintf(stderr, "pfi-test-trainer: no group %s\n", group);
    pfi_emu_jobs_release(&lib);
    return 2;
  }
  double rate, step_s;
  if (pfi_emu_run_rate(job, cap, seed, &rate, &step_s, &err) < 0) {
    fprintf(stderr, "pfi-test-trainer: %s\n", err.msg);
    pfi_emu_jobs_release(&lib);
    return 1;
  }
  struct pfi_emu_timeline tl;
  pfi_emu_timeline_init(&tl, job);
  FILE *fp = stdout;
  if (!to_stdout) {
    fp = fopen(out, "a");
    if (!fp) {
      perror(out);
      pfi_emu_jobs_release(&lib);
      return 1;
    }
  }
  if (ignore_term)
    signal(SIGTERM, SIG_IGN);
  double tokens = 0;
  long step = 0;
  int status = 0;
  for (double t = tl.startup_s; t <= duration; t += step_s) {
    if (crash_at >= 0 && t >= crash_at) {
      status = 3;
      break;
    }
    /* No steps while evaluating or writing the checkpoint. */
    if ((t >= tl.eval_at_s && t < tl.eval_at_s + tl.eval_s) ||
        (t >= tl.ckpt_at_s && t < tl.ckpt_at_s + tl.ckpt_s))
      continue;
    step++;
    tokens += rate * step_s;
    if (step % every)
      continue;
    /* A loss curve of the usual shape; only for the record. */
    double loss = 2.0 + 8.0 / sqrt((double)step);
    if (to_stdout)
      fprintf(fp, "step %ld loss %.4f tokens_per_s=%.3f\n", step, loss, rate);
    else
      fprintf(fp,
              "{\"elapsed_s\": %.6f, \"tokens\": %.0f, \"step\": %ld, "
              "\"loss\": %.4f}\n",
              t, tokens, step, loss);
  }
  fflush(fp);
  if (fp != stdout)
    fclose(fp);
  pfi_emu_jobs_release(&lib);
  if (status)
    return status;
  while (hang)
    pause();
  return 0;
}
