/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A JSON document as result tables (pfi_restab_print_doc(), pfi/restab.h):
 * lists of objects as tables, objects as field/value tables with their
 * nested parts as sections. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/error.h"
#include "pfi/fmt.h"
#include "pfi/restab.h"

/* Nesting shown as sections (and CSV paths) down to this depth; deeper
 * parts print as compact JSON text in their cell. */
#define DOC_DEPTH_MAX 16

/* Where and how the tables print. */
struct out {
  FILE *fp;
  enum pfi_restab_format f;
  int width; /* terminal: columns to fit, 0 full */
};

/* Prints t; 0 or an error code. */
static int emit(const struct pfi_restab *t, const struct out *o) {
  return o->f == PFI_RESTAB_TERM ? pfi_restab_print_term(t, o->fp, o->width)
                                 : pfi_restab_print(t, o->f, o->fp);
}

/* The unit a field name's suffix states ("power_w": W), into *label (the
 * name without it); NULL when none. */
static const char *name_unit(const char *name, char *label, size_t n,
                             enum pfi_restab_qty *q) {
  static const struct {
    const char *suffix, *unit;
    enum pfi_restab_qty q;
  } units[] = {{"_w", "W", PFI_RESTAB_Q_POWER},
               {"_s", "s", PFI_RESTAB_Q_SECONDS},
               {"_pct", "%", PFI_RESTAB_Q_SHARE},
               {"_mhz", "MHz", PFI_RESTAB_Q_CLOCK}};
  size_t len = strlen(name);
  for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
    size_t sl = strlen(units[k].suffix);
    if (len > sl && strcmp(name + len - sl, units[k].suffix) == 0 &&
        len - sl < n) {
      memcpy(label, name, len - sl);
      label[len - sl] = '\0';
      *q = units[k].q;
      return units[k].unit;
    }
  }
  *q = PFI_RESTAB_Q_NONE;
  return NULL;
}

/* Cell `col` of t's last row from JSON value v: text, integer, number,
 * true/false, null ('-'), or compact JSON for a list or an object. */
static void put_cell(struct pfi_restab *t, size_t col, json_t *v) {
  int text = t->cols[col].kind == PFI_RESTAB_TEXT;
  char num[PFI_FMT_MAX];
  if (json_is_string(v))
    pfi_restab_text(t, col, json_string_value(v));
  else if (json_is_integer(v) && text)
    pfi_restab_textf(t, col, "%lld", (long long)json_integer_value(v));
  else if (json_is_integer(v))
    pfi_restab_int(t, col, (long long)json_integer_value(v));
  else if (json_is_real(v) && text) {
    /* 15 significant digits, or 17 where 15 do not read back as the
     * same double: the text JSON gave, without an exponent below 1e15. */
    double x = json_real_value(v);
    if (isfinite(x)) {
      snprintf(num, sizeof num, "%.15g", x);
      if (strtod(num, NULL) != x)
        snprintf(num, sizeof num, "%.17g", x);
      pfi_restab_text(t, col, num);
    }
  } else if (json_is_real(v))
    pfi_restab_num(t, col, json_real_value(v));
  else if (json_is_boolean(v))
    pfi_restab_text(t, col, json_is_true(v) ? "true" : "false");
  else if (v && !json_is_null(v)) {
    char *txt = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (txt)
      pfi_restab_text(t, col, txt);
    free(txt);
  }
}

/* A list of objects as one table: a column per key (in order of first
 * appearance), a row per object. A number column's kind follows its
 * key's unit suffix. Returns 0 or 1. */
static int print_list(json_t *arr, const char *title, struct out *o) {
  size_t n = json_array_size(arr), nc = 0, cap = 0;
  struct pfi_restab_col *cols = NULL;
  char(*labels)[64] = NULL;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *k;
    json_t *v;
    json_object_foreach(json_array_get(arr, i), k, v) {
      size_t j = 0;
      while (j < nc && strcmp(cols[j].name, k) != 0)
        j++;
      if (j < nc)
        continue;
      if (nc == cap) {
        cap = cap ? 2 * cap : 16;
        struct pfi_restab_col *nc2 = realloc(cols, cap * sizeof *cols);
        char(*nl)[64] = nc2 ? realloc(labels, cap * sizeof *labels) : NULL;
        if (nc2)
          cols = nc2;
        if (!nl) {
          rc = PFI_ENOMEM;
          break;
        }
        labels = nl;
        for (size_t q = 0; q < nc; q++)
          cols[q].label = cols[q].unit ? labels[q] : NULL;
      }
      cols[nc] = (struct pfi_restab_col){.name = k, .kind = PFI_RESTAB_TEXT};
      enum pfi_restab_qty q;
      const char *u = name_unit(k, labels[nc], sizeof labels[nc], &q);
      if (u) {
        cols[nc].unit = u;
        cols[nc].label = labels[nc];
      }
      /* The column's kind from its first value that is not null. */
      for (size_t r = 0; r < n; r++) {
        json_t *x = json_object_get(json_array_get(arr, r), k);
        if (!x || json_is_null(x))
          continue;
        if (json_is_integer(x))
          cols[nc].kind = PFI_RESTAB_INT;
        else if (json_is_real(x)) {
          cols[nc].kind = PFI_RESTAB_NUM;
          cols[nc].qty = q;
        }
        break;
      }
      nc++;
    }
  }
  if (rc == 0 && nc == 0) {
    if (o->f == PFI_RESTAB_TERM)
      fprintf(o->fp, "%s%s(none)\n", title ? title : "", title ? ": " : "");
    goto out;
  }
  /* A column of integers and reals is a number column. */
  for (size_t j = 0; rc == 0 && j < nc; j++)
    if (cols[j].kind == PFI_RESTAB_INT)
      for (size_t r = 0; r < n; r++)
        if (json_is_real(json_object_get(json_array_get(arr, r),
                                         cols[j].name))) {
          enum pfi_restab_qty q;
          char tmp[64];
          cols[j].kind = PFI_RESTAB_NUM;
          name_unit(cols[j].name, tmp, sizeof tmp, &q);
          cols[j].qty = q;
          break;
        }
  if (rc == 0) {
    struct pfi_restab t;
    pfi_restab_init(&t, cols, nc);
    if (title)
      pfi_restab_title(&t, title);
    for (size_t i = 0; i < n; i++) {
      pfi_restab_row(&t);
      json_t *o = json_array_get(arr, i);
      for (size_t j = 0; j < nc; j++) {
        json_t *v = json_object_get(o, cols[j].name);
        if (cols[j].kind == PFI_RESTAB_NUM && json_is_integer(v))
          pfi_restab_num(&t, j, (double)json_integer_value(v));
        else
          put_cell(&t, j, v);
      }
    }
    rc = emit(&t, o);
    pfi_restab_release(&t);
  }
out:
  free(cols);
  free(labels);
  return rc;
}

/* Whether v is a non-empty list of objects. */
static int is_list(json_t *v) {
  if (!json_is_array(v) || json_array_size(v) == 0)
    return 0;
  for (size_t i = 0; i < json_array_size(v); i++)
    if (!json_is_object(json_array_get(v, i)))
      return 0;
  return 1;
}

/* CSV of an object: one field,value row per scalar, nested keys joined
 * with '.' and list items by their index (a.0.b). */
static void flat_rows(struct pfi_restab *t, const char *prefix, json_t *v,
                      int depth) {
  char key[512];
  if (depth < DOC_DEPTH_MAX && json_is_object(v)) {
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
      flat_rows(t, key, x, depth + 1);
    }
  } else if (depth < DOC_DEPTH_MAX && json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) {
      snprintf(key, sizeof key, "%s%s%zu", prefix, *prefix ? "." : "", i);
      flat_rows(t, key, json_array_get(v, i), depth + 1);
    }
  } else {
    pfi_restab_row(t);
    pfi_restab_text(t, 0, prefix);
    put_cell(t, 1, v);
  }
}

/* An object as tables: its scalar fields (and lists of scalars) as a
 * field/value table under `title`, then each nested object and each list
 * of objects as a section of its own, titled by its path. */
static int print_object(json_t *obj, const char *title, struct out *o,
                        int depth) {
  static const struct pfi_restab_col kv[] = {
      {.name = "field", .kind = PFI_RESTAB_TEXT},
      {.name = "value", .kind = PFI_RESTAB_TEXT}};
  struct pfi_restab t;
  pfi_restab_init(&t, kv, 2);
  t.header = 0;
  const char *k;
  json_t *v;
  int rc = 0, first = 1;
  json_object_foreach(obj, k, v) {
    if (depth < DOC_DEPTH_MAX && (json_is_object(v) || is_list(v)))
      continue;
    char label[64], txt[PFI_FMT_MAX], name[128];
    enum pfi_restab_qty q;
    const char *u = name_unit(k, label, sizeof label, &q);
    if (u)
      snprintf(name, sizeof name, "%s [%s]", label, u);
    else
      snprintf(name, sizeof name, "%s", k);
    pfi_restab_row(&t);
    pfi_restab_text(&t, 0, name);
    if (json_is_number(v) && q != PFI_RESTAB_Q_NONE) {
      pfi_restab_fmt_sig(txt, json_number_value(v), pfi_restab_qty_digits(q));
      pfi_restab_text(&t, 1, txt);
    } else if (json_is_real(v)) {
      pfi_restab_textf(&t, 1, "%.6g", json_real_value(v));
    } else {
      put_cell(&t, 1, v);
    }
  }
  if (t.nrows) {
    if (title)
      pfi_restab_title(&t, title);
    rc = emit(&t, o);
    first = 0;
  }
  pfi_restab_release(&t);
  json_object_foreach(obj, k, v) {
    if (depth >= DOC_DEPTH_MAX || (!json_is_object(v) && !is_list(v)))
      continue;
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", title ? title : "", title ? "." : "",
             k);
    if (!first)
      fputc('\n', o->fp);
    first = 0;
    int r = json_is_object(v) ? print_object(v, path, o, depth + 1)
                              : print_list(v, path, o);
    if (r && !rc)
      rc = r;
  }
  return rc;
}

int pfi_restab_print_doc(const char *json, enum pfi_restab_format f,
                         FILE *fp, int width) {
  if (f != PFI_RESTAB_TERM && f != PFI_RESTAB_CSV)
    return PFI_EINVAL;
  json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
  if (!j)
    return PFI_EPARSE;
  struct out o = {fp, f, width};
  int rc;
  if (json_is_array(j) && (is_list(j) || json_array_size(j) == 0)) {
    rc = print_list(j, NULL, &o);
  } else if (f == PFI_RESTAB_CSV || !json_is_object(j)) {
    /* CSV of an object, and any other value: field,value rows. */
    static const struct pfi_restab_col kv[] = {
        {.name = "field", .kind = PFI_RESTAB_TEXT},
        {.name = "value", .kind = PFI_RESTAB_TEXT}};
    struct pfi_restab t;
    pfi_restab_init(&t, kv, 2);
    t.header = f == PFI_RESTAB_CSV;
    flat_rows(&t, "", j, 0);
    rc = emit(&t, &o);
    pfi_restab_release(&t);
  } else {
    rc = print_object(j, NULL, &o, 0);
  }
  json_decref(j);
  if (rc == 0 && ferror(fp))
    rc = PFI_EIO;
  return rc;
}
