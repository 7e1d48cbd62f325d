/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi devices`: the GPUs of a backend, their power limits and power. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_device.h"
#include "opt.h"

/* The options, bound to these (src/base/opt.h). */
static const char *backend, *params;
static int format;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("backend", 0, &backend, "B",
                   "nvml (NVIDIA GPUs through libnvidia-ml.so.1; "
                   "$PFI_NVML_LIB overrides the library path) or emu "
                   "(emulated H200/H100 GPUs). Default: $PFI_BACKEND, else "
                   "nvml, which must load and find a GPU: never the emulator "
                   "unless named."),
    PFI_OPT_STRING("params", 0, &params, "P",
                   "backend parameters, e.g. for emu profile=h100,gpus=4 (see "
                   "docs/nvml.md and docs/emulator.md)"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &format,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_NEEDS("params", "backend"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "devices",
    "usage: pfi devices [--backend emu|nvml] [--params P] [--format F]\n",
    "Lists the GPUs of a device backend: name, UUID, power-limit range\n"
    "(min_cap_w..max_cap_w), default limit, current and enforced limit, and\n"
    "one telemetry sample (power, SM and memory clocks, temperature, frame\n"
    "buffer used). Reading needs no privileges.\n",
    opts,
    "JSON is an array with one object per GPU: index, name, uuid, min_cap_w,\n"
    "max_cap_w, default_cap_w, cap_w, enforced_cap_w, power_w, sm_clock_mhz,\n"
    "mem_clock_mhz, gpu_temp_c, fb_used_mib, backend, emulated. A value the\n"
    "GPU or backend does not provide is null in JSON and - in table and csv.\n"
    "Exit status: 0 ok, 1 a device error (GPU lost, permission, NVML not\n"
    "available: no libnvidia-ml.so.1, no GPU), 2 bad usage.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

/* One GPU's row; NAN marks "not available". */
struct row {
  unsigned index;
  char name[128];
  char uuid[128];
  double min_w, max_w, def_w, cap_w, enf_w;
  double power_w, sm_mhz, mem_mhz, temp_c, fb_mib;
};

/* An unsupported read is a missing value; anything else ends the command. */
static int soft(int rc, struct pfi_error *err) {
  if (rc == PFI_ENOTSUP) {
    pfi_error_clear(err);
    return 0;
  }
  return rc;
}

static int read_row(struct pfi_device *dev, unsigned i, struct row *r,
                    struct pfi_error *err) {
  int rc;
  struct pfi_power_limits lim;
  struct pfi_sample s;
  uint32_t mw;
  memset(r, 0, sizeof *r);
  r->index = i;
  r->min_w = r->max_w = r->def_w = r->cap_w = r->enf_w = NAN;
  r->power_w = r->sm_mhz = r->mem_mhz = r->temp_c = r->fb_mib = NAN;
  snprintf(r->name, sizeof r->name, "-");
  snprintf(r->uuid, sizeof r->uuid, "-");
  if ((rc = soft(pfi_device_name(dev, i, r->name, sizeof r->name, err), err)))
    return rc;
  if ((rc = soft(pfi_device_uuid(dev, i, r->uuid, sizeof r->uuid, err), err)))
    return rc;
  rc = pfi_device_limits(dev, i, &lim, err);
  if (rc == 0) {
    r->min_w = lim.min_mw / 1000.0;
    r->max_w = lim.max_mw / 1000.0;
    r->def_w = lim.default_mw / 1000.0;
  } else if ((rc = soft(rc, err))) {
    return rc;
  }
  rc = pfi_device_get_cap(dev, i, &mw, err);
  if (rc == 0)
    r->cap_w = mw / 1000.0;
  else if ((rc = soft(rc, err)))
    return rc;
  rc = pfi_device_enforced_cap(dev, i, &mw, err);
  if (rc == 0)
    r->enf_w = mw / 1000.0;
  else if ((rc = soft(rc, err)))
    return rc;
  rc = pfi_device_sample(dev, i, &s, err);
  if (rc == 0) {
    if (pfi_sample_has(&s, PFI_FIELD_POWER))
      r->power_w = s.v[PFI_FIELD_POWER];
    if (pfi_sample_has(&s, PFI_FIELD_SM_CLOCK))
      r->sm_mhz = s.v[PFI_FIELD_SM_CLOCK];
    if (pfi_sample_has(&s, PFI_FIELD_MEM_CLOCK))
      r->mem_mhz = s.v[PFI_FIELD_MEM_CLOCK];
    if (pfi_sample_has(&s, PFI_FIELD_TEMP))
      r->temp_c = s.v[PFI_FIELD_TEMP];
    if (pfi_sample_has(&s, PFI_FIELD_FB_USED))
      r->fb_mib = s.v[PFI_FIELD_FB_USED];
  } else if ((rc = soft(rc, err))) {
    return rc;
  }
  return 0;
}

/* One column list for the three formats; '-' where a reading is missing
 * (null in JSON). emulated is text in CSV, a boolean in JSON. */
enum {
  C_INDEX, C_NAME, C_UUID, C_MIN, C_MAX, C_DEF, C_CAP, C_ENF, C_POW, C_SM,
  C_MEM, C_TEMP, C_FB, C_BACKEND, C_EMU, C_EMUJ, C_N
};
#define W1(n, l)                                                               \
  {.name = n, .label = l, .unit = "W", .kind = PFI_RESTAB_NUM, .style = 'f',   \
   .prec = 1, .qty = PFI_RESTAB_Q_POWER}
#define W0(n, l, u, q)                                                         \
  {.name = n, .label = l, .unit = u, .kind = PFI_RESTAB_NUM, .style = 'f',     \
   .prec = 0, .qty = q}
static const struct pfi_restab_col cols[C_N] = {
    [C_INDEX] = {.name = "index", .label = "gpu", .kind = PFI_RESTAB_INT,
                 .align = PFI_RESTAB_LEFT},
    [C_NAME] = {.name = "name", .kind = PFI_RESTAB_TEXT, .max_width = 26},
    [C_UUID] = {.name = "uuid", .kind = PFI_RESTAB_TEXT},
    [C_MIN] = W1("min_cap_w", "min"),
    [C_MAX] = W1("max_cap_w", "max"),
    [C_DEF] = W1("default_cap_w", "default"),
    [C_CAP] = W1("cap_w", "cap"),
    [C_ENF] = W1("enforced_cap_w", "enforced"),
    [C_POW] = W1("power_w", "power"),
    [C_SM] = W0("sm_clock_mhz", "sm", "MHz", PFI_RESTAB_Q_CLOCK),
    [C_MEM] = W0("mem_clock_mhz", "mem", "MHz", PFI_RESTAB_Q_CLOCK),
    [C_TEMP] = W0("gpu_temp_c", "temp", "C", PFI_RESTAB_Q_TEMP),
    [C_FB] = {.name = "fb_used_mib", .kind = PFI_RESTAB_NUM, .style = 'f',
              .prec = 0, .formats = PFI_RESTAB_IN_FILES},
    [C_BACKEND] = {.name = "backend", .kind = PFI_RESTAB_TEXT,
                   .formats = PFI_RESTAB_IN_FILES},
    [C_EMU] = {.name = "emulated", .kind = PFI_RESTAB_TEXT,
               .formats = PFI_RESTAB_IN_CSV},
    [C_EMUJ] = {.name = "emulated", .kind = PFI_RESTAB_INT, .json_bool = 1,
                .formats = PFI_RESTAB_IN_JSON},
};
#undef W1
#undef W0

/* Every GPU's row, in the format asked for. An exit status. */
static int print_devices(struct pfi_device *dev, const char *chosen,
                         const struct row *rows, unsigned n) {
  int any_emulated = 0;
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  for (unsigned i = 0; i < n && !tab.failed; i++) {
    const struct row *r = &rows[i];
    int emulated = pfi__cli_emulated(dev, r->name);
    any_emulated |= emulated;
    const double v[] = {r->min_w, r->max_w,  r->def_w,   r->cap_w,
                        r->enf_w, r->power_w, r->sm_mhz, r->mem_mhz,
                        r->temp_c, r->fb_mib};
    pfi_restab_row(&tab);
    pfi_restab_int(&tab, C_INDEX, r->index);
    pfi_restab_text(&tab, C_NAME, r->name);
    pfi_restab_text(&tab, C_UUID, r->uuid);
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
      pfi_restab_num(&tab, C_MIN + k, v[k]);
    pfi_restab_text(&tab, C_BACKEND, chosen);
    pfi_restab_text(&tab, C_EMU, emulated ? "true" : "false");
    pfi_restab_int(&tab, C_EMUJ, emulated);
  }
  int status = pfi_cli_print_table(&tab, format);
  pfi_restab_release(&tab);
  if (format == PFI_FMT_TABLE && any_emulated)
    printf("(emulated GPUs; not a measurement)\n");
  return status;
}

int cmd_devices(int argc, char **argv) {
  const char *chosen = NULL;
  struct pfi_device *dev = NULL;
  struct row *rows = NULL;
  struct pfi_error err;
  int status = 0, rc;
  unsigned n = 0;
  pfi_error_clear(&err);
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  rc = pfi__cli_open_device("devices", backend, params, &dev, &chosen, &err);
  if (rc == 0)
    rc = pfi_device_count(dev, &n, &err);
  if (rc == 0 && !(rows = calloc(n ? n : 1, sizeof *rows)))
    rc = pfi_error_set(&err, PFI_ENOMEM, "out of memory");
  for (unsigned i = 0; i < n && rc == 0; i++)
    rc = read_row(dev, i, &rows[i], &err);
  if (rc < 0) {
    status = pfi_cli_fail(&err);
  } else {
    status = print_devices(dev, chosen, rows, n);
    if (fflush(stdout) != 0)
      status = PFI_EXIT_FAIL;
  }
  free(rows);
  pfi_device_close(dev);
  return status;
}
