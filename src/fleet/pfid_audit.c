/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's audit trail, as its API answers it, into a result table (the
 * table `pfi ctl audit` prints). */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pfi/pfid.h"
#include "pfi/restab.h"
#include "pfi/timeline.h"

static const struct pfi_restab_col cols[] = {
    {.name = "id", .kind = PFI_RESTAB_INT},
    {.name = "time", .kind = PFI_RESTAB_TEXT},
    {.name = "pfid", .kind = PFI_RESTAB_TEXT},
    {.name = "who", .kind = PFI_RESTAB_TEXT},
    {.name = "role", .kind = PFI_RESTAB_TEXT},
    {.name = "peer", .kind = PFI_RESTAB_TEXT},
    {.name = "method", .kind = PFI_RESTAB_TEXT},
    {.name = "path", .kind = PFI_RESTAB_TEXT},
    {.name = "status", .kind = PFI_RESTAB_INT},
    {.name = "error", .kind = PFI_RESTAB_TEXT, .max_width = 40},
    {.name = "body", .kind = PFI_RESTAB_TEXT, .max_width = 40},
};

/* The text fields, in the table's order from column 2. */
static const char *const txt[] = {"pfid",   "who",  "role", "peer",
                                  "method", "path", "body"};

/* The first field of row r that is missing or of the wrong type, or NULL. */
static const char *bad_field(json_t *r) {
  if (!json_is_object(r))
    return "(the row)";
  json_t *t = json_object_get(r, "t");
  double ts = json_number_value(t);
  if (!json_is_integer(json_object_get(r, "id")))
    return "id";
  /* A time before the year 10000, which RFC 3339 can write. */
  if (!json_is_number(t) || !(ts >= 0 && ts < 253402300800.0))
    return "t";
  if (!json_is_integer(json_object_get(r, "status")))
    return "status";
  for (size_t k = 0; k < sizeof txt / sizeof *txt; k++)
    if (!json_is_string(json_object_get(r, txt[k])))
      return txt[k];
  json_t *e = json_object_get(r, "error");
  if (e && !json_is_string(e) && !json_is_null(e))
    return "error";
  return NULL;
}

int pfi_pfid_audit_table(const char *json, size_t len, struct pfi_restab *t,
                         struct pfi_error *err) {
  json_error_t je;
  json_t *a = json_loadb(json, len, 0, &je);
  int rc = pfi_restab_init(t, cols, sizeof cols / sizeof *cols);
  if (rc < 0) {
    json_decref(a);
    return pfi_error_set(err, rc, "out of memory");
  }
  if (!a) {
    rc = pfi_error_set(err, PFI_EPARSE, "audit answer: line %d: %s", je.line,
                       je.text);
    goto out;
  }
  if (!json_is_array(a)) {
    rc =
        pfi_error_set(err, PFI_EPARSE, "audit answer: expected a list of rows");
    goto out;
  }
  size_t i;
  json_t *r;
  json_array_foreach(a, i, r) {
    const char *bad = bad_field(r);
    if (bad) {
      rc = pfi_error_set(
          err, PFI_EPARSE,
          "audit answer: row %zu: field \"%s\": missing or of the "
          "wrong type",
          i + 1, bad);
      goto out;
    }
    char when[32];
    pfi_time_format_rfc3339(
        (int64_t)floor(json_number_value(json_object_get(r, "t"))), when,
        sizeof when);
    pfi_restab_row(t);
    pfi_restab_int(t, 0,
                   (long long)json_integer_value(json_object_get(r, "id")));
    pfi_restab_text(t, 1, when);
    for (size_t k = 0; k < 6; k++)
      pfi_restab_text(t, 2 + k, json_string_value(json_object_get(r, txt[k])));
    pfi_restab_int(t, 8,
                   (long long)json_integer_value(json_object_get(r, "status")));
    const char *e = json_string_value(json_object_get(r, "error"));
    if (e)
      pfi_restab_text(t, 9, e);
    pfi_restab_text(t, 10, json_string_value(json_object_get(r, "body")));
  }
  if (t->failed)
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
out:
  json_decref(a);
  if (rc < 0)
    pfi_restab_release(t);
  return rc;
}
