/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The allocation-failure hook shared by the allocation-failure tests
 * (test_oom.c, test_report_oom.c). Their cmake files link them with --wrap
 * for the symbols below, so every call from libpfi's static objects comes
 * here; each wrapper fails when the including file's oom_fail_now()
 * (defined before this header is included) says so. Include once per
 * program, after <errno.h>, <string.h> and the GSL headers.
 */
#ifndef PFI_OOM_WRAP_H
#define PFI_OOM_WRAP_H
#ifdef PFI_OOM_WRAP
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
gsl_matrix *__real_gsl_matrix_alloc(size_t n1, size_t n2);
gsl_vector *__real_gsl_vector_alloc(size_t n);
gsl_rng *__real_gsl_rng_alloc(const gsl_rng_type *t);
gsl_multifit_linear_workspace *__real_gsl_multifit_linear_alloc(size_t n,
                                                                size_t p);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
gsl_matrix *__wrap_gsl_matrix_alloc(size_t n1, size_t n2);
gsl_vector *__wrap_gsl_vector_alloc(size_t n);
gsl_rng *__wrap_gsl_rng_alloc(const gsl_rng_type *t);
gsl_multifit_linear_workspace *__wrap_gsl_multifit_linear_alloc(size_t n,
                                                                size_t p);

void *__wrap_malloc(size_t n) {
  if (oom_fail_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
  if (oom_fail_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
  if (oom_fail_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_realloc(p, n);
}

/* strdup and strndup allocate inside the C library, out of the wrapper's
 * reach, so they are rebuilt here on the wrapped malloc. */
char *__wrap_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = __wrap_malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

char *__wrap_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = __wrap_malloc(len + 1);
  if (d) {
    memcpy(d, s, len);
    d[len] = '\0';
  }
  return d;
}

/* GSL's allocators return NULL on failure when GSL's error handler is off;
 * with the default handler they abort, which no caller can recover from, so
 * the NULL return is the case worth testing. */
gsl_matrix *__wrap_gsl_matrix_alloc(size_t n1, size_t n2) {
  return oom_fail_now() ? NULL : __real_gsl_matrix_alloc(n1, n2);
}

gsl_vector *__wrap_gsl_vector_alloc(size_t n) {
  return oom_fail_now() ? NULL : __real_gsl_vector_alloc(n);
}

gsl_rng *__wrap_gsl_rng_alloc(const gsl_rng_type *t) {
  return oom_fail_now() ? NULL : __real_gsl_rng_alloc(t);
}

gsl_multifit_linear_workspace *__wrap_gsl_multifit_linear_alloc(size_t n,
                                                                size_t p) {
  return oom_fail_now() ? NULL : __real_gsl_multifit_linear_alloc(n, p);
}
#endif
#endif
