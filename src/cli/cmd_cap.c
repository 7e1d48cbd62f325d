/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi cap`: the operator's own power-limit changes, all GPUs or none. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_device.h"
#include "opt.h"
#include "pfi/capset.h"
#include "pfi/gpulock.h"
#include "pfi/plan.h"
#include "pfi/store.h"

/* The options, bound to these (src/base/opt.h). */
static const char *backend, *params, *gpus_arg, *db, *plan_path;
static double set_w;
static int reset, dry, force, format;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("backend", 0, &backend, "B",
                   "nvml or emu (default: $PFI_BACKEND, else nvml; never the "
                   "emulator unless named)"),
    PFI_OPT_STRING("params", 0, &params, "P",
                   "backend parameters, e.g. for emu profile=h100,gpus=4"),
    {.lng = "gpus", .arg = PFI_ARG_REQ, .argname = "LIST",
     .help = "GPU indices: all, 0,2,5 or ranges 0-3", .type = PFI_OT_STRING,
     .var = &gpus_arg, .def = "all"},
    /* 10 kW is far above any GPU's limit and keeps the conversion to
     * integer milliwatts exact in 32 bits. */
    PFI_OPT_NUMBER("set", &set_w, 0, 10000, PFI_RANGE_LO_OPEN, "W",
                   "the new limit in watts (e.g. 500 or 412.5)"),
    PFI_OPT_FLAG("reset", 0, &reset, "the GPUs' default limits"),
    PFI_OPT_STRING("plan", 0, &plan_path, "FILE",
                   "a cap plan (pfi allocate --plan; docs/plan.md): each "
                   "job's cap on each of its GPUs, all or none; needs --db "
                   "(pfi restore --db STORE puts every GPU back to the limit "
                   "it had before)"),
    PFI_OPT_STRING("db", 0, &db, "FILE",
                   "record the change in FILE for pfi restore --db FILE"),
    PFI_OPT_FLAG("dry-run", 0, &dry,
                 "check and print the changes without making them"),
    PFI_OPT_FLAG("force", 0, &force,
                 "change GPUs a running sweep holds (the sweep will still "
                 "restore its own starting limit when it ends)"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &format,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_ONE_OF("set", "reset", "plan"),
    PFI_RULE_NEEDS("params", "backend"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "cap",
    "usage: pfi cap [--backend emu|nvml] [--params P] [--gpus LIST]\n"
    "               (--set W | --reset) [--db FILE] [--dry-run] [--force]\n"
    "               [--format F]\n"
    "       pfi cap --plan FILE --db STORE [--backend B] [--params P]\n"
    "               [--dry-run] [--force] [--format F]\n",
    "Sets the power limit of GPUs (--set W, in watts) or returns it to each\n"
    "GPU's default (--reset), and prints old -> new for each GPU.\n"
    "\n"
    "All or none: every GPU's target is checked against its own limit range\n"
    "before anything changes; if setting one GPU then fails (or reads back a\n"
    "different value), the GPUs already changed are restored to their old\n"
    "limits. On real GPUs (nvml) setting a limit needs root or\n"
    "CAP_SYS_ADMIN; a limit set this way lasts until changed or the driver\n"
    "reloads. On emu the limits are those of emulated GPUs, kept in the\n"
    "emulator's state directory ($PFI_EMU_STATE).\n"
    "\n"
    "With --db FILE the change is recorded like a sweep's: each GPU's limit\n"
    "before it goes into FILE's cap ledger (created when absent) and into the\n"
    "machine's lock record before anything changes, and stays there after\n"
    "pfi cap exits: pfi restore --db FILE puts every GPU back to the limit\n"
    "it had before (also after pfi cap was killed in the middle). A later\n"
    "pfi cap --db FILE keeps the first limits as the ones to restore; other\n"
    "sweeps and caps refuse these GPUs until they are restored. Without\n"
    "--db, a pfi cap killed in the middle is undone by the next pfi that\n"
    "takes these GPUs' locks.\n"
    "\n"
    "A GPU that a running pfi sweep holds is not changed: the sweep restores\n"
    "the limit it found at its start when it ends (undoing this one), and a\n"
    "limit changed under it corrupts its measurement. pfi cap takes the same\n"
    "per-GPU locks as the sweep (docs/sweep.md) before changing anything, and\n"
    "exits 1 naming the GPU and the sweep's store if one is held; --force\n"
    "changes it anyway, with a warning.\n",
    opts,
    "JSON is an array with one object per GPU: index, uuid, old_cap_w,\n"
    "new_cap_w, enforced_cap_w, changed, backend, emulated. Exit status: 0\n"
    "ok, 1 a device error (no permission, GPU lost; the message says which\n"
    "GPUs were restored) or a GPU held by a running sweep, 2 bad usage or "
    "a target outside a GPU's range.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

struct item {
  unsigned gpu;
  const char *job; /* --plan: the job it belongs to */
  uint32_t plan_mw;
  char uuid[128];
  char name[128];
  struct pfi_power_limits lim;
  uint32_t old_mw, new_mw, enforced_mw;
  int have_enforced;
};

/* Warns about each GPU changed without its lock (--force). */
static void warn_forced(const struct pfi_capset *cs, const struct item *items,
                        size_t n) {
  for (size_t k = 0; k < n; k++) {
    struct pfi_gpu_lock_holder h;
    char who[700];
    if (!pfi_capset_forced(cs, k, &h))
      continue;
    int sweep = strcmp(h.cmd, "sweep") == 0;
    fprintf(stderr,
            "pfi cap: warning: GPU %u (%s) is held by %s%s; changing it "
            "anyway (--force)%s\n",
            items[k].gpu, items[k].uuid, sweep ? "a running " : "",
            pfi_gpu_lock_holder_str(&h, who, sizeof who),
            sweep ? ": the sweep's measurement at its cap is disturbed, "
                    "and it restores its own starting limit when it ends"
                  : "");
  }
}

/* --plan: the GPUs the plan names, in plan order, each below `count`. */
static int plan_gpus(const char *path, unsigned count, struct pfi_plan *plan,
                     unsigned **gpus, size_t *n, struct pfi_error *err) {
  int rc = pfi_plan_read(plan, path, err);
  if (rc < 0)
    return rc;
  size_t total = 0;
  for (size_t i = 0; i < plan->n; i++) {
    const struct pfi_plan_job *j = &plan->j[i];
    if (j->ngpu == 0)
      return pfi_error_setloc(err, PFI_EPARSE, plan->source, j->line, 1,
                              "job '%s' names no GPUs (gpu_ids; pfi allocate "
                              "--gpu-map writes them)",
                              j->job);
    for (size_t k = 0; k < j->ngpu; k++)
      if (j->gpu_ids[k] >= count)
        return pfi_error_setloc(err, PFI_EPARSE, plan->source, j->line, 1,
                                "job '%s': GPU %u does not exist (%u GPUs)",
                                j->job, j->gpu_ids[k], count);
    total += j->ngpu;
  }
  *gpus = calloc(total ? total : 1, sizeof **gpus);
  if (!*gpus)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  *n = 0;
  for (size_t i = 0; i < plan->n; i++)
    for (size_t k = 0; k < plan->j[i].ngpu; k++)
      (*gpus)[(*n)++] = plan->j[i].gpu_ids[k];
  return 0;
}

/* The plan's job and target of it->gpu. */
static void plan_target(const struct pfi_plan *plan, struct item *it) {
  for (size_t i = 0; i < plan->n; i++)
    for (size_t k = 0; k < plan->j[i].ngpu; k++)
      if (plan->j[i].gpu_ids[k] == it->gpu) {
        it->job = plan->j[i].job;
        it->plan_mw = (uint32_t)llround(plan->j[i].cap_w * 1000.0);
      }
}

/* One change: the device, the GPUs with their old and new limits, the
 * store and the cap set that changes them all or none. */
struct change {
  const char *chosen; /* the backend */
  struct pfi_plan plan;
  struct pfi_device *dev;
  unsigned count; /* GPUs of the device */
  unsigned *gpus;
  struct item *items;
  size_t n;
  struct pfi_store *st;
  struct pfi_capset *cs;
  uint32_t *target; /* per item, mW */
};

/* The device, the GPUs (--gpus or --plan's) with their UUIDs and names,
 * which name their locks, and the store. 0 or -1 with err set. */
static int open_gpus(struct change *c, struct pfi_error *err) {
  int rc = pfi__cli_open_device("cap", backend, params, &c->dev, &c->chosen,
                                err);
  if (rc == 0)
    rc = pfi_device_count(c->dev, &c->count, err);
  if (rc == 0 && plan_path)
    rc = plan_gpus(plan_path, c->count, &c->plan, &c->gpus, &c->n, err);
  else if (rc == 0)
    rc = pfi__cli_parse_gpus(gpus_arg, c->count, &c->gpus, &c->n, err);
  if (rc < 0)
    return rc;
  c->items = calloc(c->n ? c->n : 1, sizeof *c->items);
  c->target = calloc(c->n ? c->n : 1, sizeof *c->target);
  if (!c->items || !c->target)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t k = 0; k < c->n; k++) {
    struct item *it = &c->items[k];
    it->gpu = c->gpus[k];
    if (plan_path)
      plan_target(&c->plan, it);
    snprintf(it->uuid, sizeof it->uuid, "-");
    snprintf(it->name, sizeof it->name, "-");
    rc = pfi_device_uuid(c->dev, it->gpu, it->uuid, sizeof it->uuid, err);
    if (rc == 0)
      rc = pfi_device_name(c->dev, it->gpu, it->name, sizeof it->name, err);
    if (rc == PFI_ENOTSUP)
      rc = 0;
    if (rc < 0)
      return rc;
  }
  if (db && !dry)
    return pfi_store_open(&c->st, db, PFI_STORE_CREATE, err);
  return 0;
}

/* The locks before the limits are read, so that the old limits (printed,
 * and restored on a failure) are not another pfi's passing ones. A dry
 * run takes them too: it says what the real command would do, and that
 * would be refused. 0 or -1 with err set. */
static int take_locks(struct change *c, struct pfi_error *err) {
  int rc = pfi_capset_open(
      &c->cs, c->st, c->dev, c->chosen, params, c->gpus, c->n, "cap",
      (force ? PFI_CAPSET_FORCE : 0u) | (c->st ? PFI_CAPSET_KEEP : 0u), err);
  if (rc == PFI_EBUSY && !strstr(err->msg, "pfi restore --db")) {
    size_t l = strlen(err->msg);
    snprintf(err->msg + l, sizeof err->msg - l, "; --force changes it anyway");
  }
  if (rc < 0)
    return rc;
  warn_forced(c->cs, c->items, c->n);
  return 0;
}

/* Every GPU's limits, old limit and new one, each new one within its
 * range, before any is changed. 0 or -1 with err set. */
static int check_limits(struct change *c, uint32_t set_mw,
                        struct pfi_error *err) {
  for (size_t k = 0; k < c->n; k++) {
    struct item *it = &c->items[k];
    int rc = pfi_device_limits(c->dev, it->gpu, &it->lim, err);
    if (rc == 0)
      rc = pfi_device_get_cap(c->dev, it->gpu, &it->old_mw, err);
    if (rc < 0)
      return rc;
    it->new_mw = plan_path ? it->plan_mw : reset ? it->lim.default_mw : set_mw;
    c->target[k] = it->new_mw;
    if (plan_path &&
        (it->new_mw < it->lim.min_mw || it->new_mw > it->lim.max_mw))
      return pfi_error_set(err, PFI_ERANGE,
                           "the plan's cap %.3f W for job '%s' is outside GPU "
                           "%u's power-limit range %.3f..%.3f W; nothing was "
                           "changed",
                           it->new_mw / 1000.0, it->job, it->gpu,
                           it->lim.min_mw / 1000.0, it->lim.max_mw / 1000.0);
    if (it->new_mw < it->lim.min_mw || it->new_mw > it->lim.max_mw)
      return pfi_error_set(err, PFI_ERANGE,
                           "%s %.3f W is outside GPU %u's power-limit range "
                           "%.3f..%.3f W; nothing was changed",
                           reset ? "the default limit" : "--set",
                           it->new_mw / 1000.0, it->gpu,
                           it->lim.min_mw / 1000.0, it->lim.max_mw / 1000.0);
  }
  return 0;
}

/* After a failed apply: which GPUs were put back, and which could not
 * be. */
static void report_undone(const struct change *c) {
  int bad = 0;
  for (size_t k = c->n; k-- > 0;) {
    int u = pfi_capset_undone(c->cs, k);
    if (u > 0)
      fprintf(stderr, "pfi cap: GPU %u restored to %.3f W\n", c->items[k].gpu,
              c->items[k].old_mw / 1000.0);
    else if (u < 0) {
      fprintf(stderr, "pfi cap: GPU %u could NOT be restored to %.3f W\n",
              c->items[k].gpu, c->items[k].old_mw / 1000.0);
      bad++;
    }
  }
  if (bad)
    fprintf(stderr,
            "pfi cap: %d GPU%s left at a changed limit; check "
            "with 'pfi devices'%s\n",
            bad, bad == 1 ? "" : "s",
            c->st ? "" : " (the next pfi that takes its lock restores it)");
}

/* Applies the new limits, all or none, each read back (pfi/capset.h),
 * then reads the limits the GPUs enforce. 0; -1 with err set; or, when
 * the apply failed, an exit status with the message and what was undone
 * printed. */
static int apply(struct change *c, struct pfi_error *err) {
  if (!dry) {
    if (pfi_capset_apply(c->cs, c->target, err) < 0) {
      int status = pfi_cli_fail(err);
      report_undone(c);
      return status;
    }
    /* Without a store the new limits are simply the GPUs' limits now. */
    if (!c->st && pfi_capset_commit(c->cs, err) < 0)
      return -1;
  }
  for (size_t k = 0; k < c->n; k++) {
    struct item *it = &c->items[k];
    uint32_t mw;
    struct pfi_error e;
    if (pfi_device_enforced_cap(c->dev, it->gpu, &mw, &e) == 0) {
      it->enforced_mw = mw;
      it->have_enforced = 1;
    }
  }
  return 0;
}

static int print_json(const struct change *c) {
  json_t *arr = json_array();
  for (size_t k = 0; k < c->n; k++) {
    const struct item *it = &c->items[k];
    int emulated = pfi__cli_emulated(c->dev, it->name);
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(it->gpu));
    if (it->job)
      json_object_set_new(o, "job", pfi_cli_json_str(it->job));
    json_object_set_new(o, "uuid", pfi_cli_json_str(it->uuid));
    json_object_set_new(o, "old_cap_w", json_real(it->old_mw / 1000.0));
    json_object_set_new(o, "new_cap_w", json_real(it->new_mw / 1000.0));
    json_object_set_new(o, "enforced_cap_w",
                        it->have_enforced ? json_real(it->enforced_mw / 1000.0)
                                          : json_null());
    json_object_set_new(o, "changed",
                        json_boolean(!dry && it->new_mw != it->old_mw));
    json_object_set_new(o, "dry_run", json_boolean(dry));
    json_object_set_new(o, "backend", json_string(c->chosen));
    json_object_set_new(o, "emulated", json_boolean(emulated));
    json_array_append_new(arr, o);
  }
  return pfi_cli_print_json(arr);
}

/* '-' where the enforced limit could not be read. */
static int print_csv(const struct change *c) {
  enum { C_IDX, C_UUID, C_OLD, C_NEW, C_ENF, C_CHG, C_DRY, C_BACK, C_EMU,
         C_N };
#define W3(n) {.name = n, .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3}
#define TXT(n) {.name = n, .kind = PFI_RESTAB_TEXT}
  static const struct pfi_restab_col cols[C_N] = {
      [C_IDX] = {.name = "index", .kind = PFI_RESTAB_INT},
      [C_UUID] = TXT("uuid"),
      [C_OLD] = W3("old_cap_w"),
      [C_NEW] = W3("new_cap_w"),
      [C_ENF] = W3("enforced_cap_w"),
      [C_CHG] = TXT("changed"),
      [C_DRY] = TXT("dry_run"),
      [C_BACK] = TXT("backend"),
      [C_EMU] = TXT("emulated"),
  };
#undef W3
#undef TXT
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  for (size_t k = 0; k < c->n && !tab.failed; k++) {
    const struct item *it = &c->items[k];
    int changed = !dry && it->new_mw != it->old_mw;
    pfi_restab_row(&tab);
    pfi_restab_int(&tab, C_IDX, it->gpu);
    pfi_restab_text(&tab, C_UUID, it->uuid);
    pfi_restab_num(&tab, C_OLD, it->old_mw / 1000.0);
    pfi_restab_num(&tab, C_NEW, it->new_mw / 1000.0);
    if (it->have_enforced)
      pfi_restab_num(&tab, C_ENF, it->enforced_mw / 1000.0);
    pfi_restab_text(&tab, C_CHG, changed ? "true" : "false");
    pfi_restab_text(&tab, C_DRY, dry ? "true" : "false");
    pfi_restab_text(&tab, C_BACK, c->chosen);
    pfi_restab_text(&tab, C_EMU,
                    pfi__cli_emulated(c->dev, it->name) ? "true" : "false");
  }
  int status = pfi_cli_print_table(&tab, PFI_FMT_CSV);
  pfi_restab_release(&tab);
  return status;
}

/* One sentence per GPU, not a table. */
static void print_sentences(const struct change *c) {
  for (size_t k = 0; k < c->n; k++) {
    const struct item *it = &c->items[k];
    int emulated = pfi__cli_emulated(c->dev, it->name);
    int changed = !dry && it->new_mw != it->old_mw;
    printf("GPU %u%s%s: %.1f W -> %.1f W%s%s\n", it->gpu, it->job ? " " : "",
           it->job ? it->job : "", it->old_mw / 1000.0, it->new_mw / 1000.0,
           dry       ? " (dry run)"
           : changed ? ""
                     : " (unchanged)",
           emulated ? " [emulated]" : "");
  }
}

int cmd_cap(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  if (plan_path && strcmp(gpus_arg, "all") != 0)
    return pfi_cli_usage("cap", "--plan names the GPUs itself; drop --gpus");
  if (plan_path && !db && !dry)
    return pfi_cli_usage("cap", "--plan needs --db STORE: the limits found are "
                                "recorded there, and pfi restore --db STORE "
                                "puts every GPU back");
  if (pfi_cli_input("--plan", plan_path))
    return PFI_EXIT_USAGE;
  /* Watts to integer milliwatts (--set's range keeps it exact). */
  uint32_t set_mw = 0;
  if (pfi_opt_given(&op, "set"))
    set_mw = (uint32_t)llround(set_w * 1000.0);
  struct change ch, *c = &ch;
  memset(c, 0, sizeof *c);
  pfi_plan_init(&c->plan);
  struct pfi_error err;
  pfi_error_clear(&err);
  int status;
  if (open_gpus(c, &err) < 0 || take_locks(c, &err) < 0 ||
      check_limits(c, set_mw, &err) < 0 || (status = apply(c, &err)) < 0) {
    status = pfi_cli_fail(&err);
  } else if (status == 0 && format == PFI_FMT_JSON) {
    status = print_json(c);
  } else if (status == 0) {
    if (format == PFI_FMT_CSV)
      status = print_csv(c);
    else
      print_sentences(c);
    if (fflush(stdout) != 0)
      status = PFI_EXIT_FAIL;
  }
  pfi_capset_close(c->cs);
  pfi_store_close(c->st);
  pfi_plan_release(&c->plan);
  free(c->target);
  free(c->items);
  free(c->gpus);
  pfi_device_close(c->dev);
  return status;
}
