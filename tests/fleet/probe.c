/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet tests' probe: does with given NATS credentials what an attacker
 * on a node might try, and says what NATS answered.
 *   pfi-fleet-probe URL USER PWFILE publish SUBJECT FILE
 *   pfi-fleet-probe URL USER PWFILE kvput KEY FILE
 *   pfi-fleet-probe URL USER PWFILE subscribe SUBJECT -
 *   pfi-fleet-probe URL USER PWFILE kvbatch PREFIX N,WINDOW
 *   pfi-fleet-probe URL USER PWFILE submany PREFIX N
 *   pfi-fleet-probe URL USER PWFILE flood SUBJECT N:FILE
 * Exit 0: accepted; 3: refused (permissions); 1: another failure.
 *
 * flood publishes FILE's bytes N times (at most 100,000) on SUBJECT as
 * fast as the connection takes them, then waits for the server to have
 * them all (a flush), and prints how many were sent.
 *
 * kvbatch writes N keys PREFIX.0.. by pipelined compare-and-set
 * (pfi_nats_kv_cas_batch, WINDOW answers awaited at once) and prints what
 * the bucket says of each step, read back key by key: the creations, the
 * same creations again (every one exists), and an update of all on their
 * revisions after another write moved key 7's, then plain puts of all.
 *
 * submany subscribes to PREFIX.0 .. PREFIX.N-1 with one
 * pfi_nats_subscribe_many, publishes one message on each and on PREFIX.N
 * (not subscribed), and prints how many arrived, how many subjects once
 * each with their own message, and any other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "pfi/transport.h"

/* Counts the outcomes of a batch; first_conflict the lowest index of a
 * lost write (-1 none), last_written the highest written (-1 none). */
static void tally(const struct pfi_nats_kv_op *op, size_t n, const char *what) {
  size_t w = 0, c = 0, ns = 0, io = 0;
  long first_c = -1, last_w = -1;
  for (size_t i = 0; i < n; i++) {
    if (op[i].rc == 0) {
      w++;
      last_w = (long)i;
    } else if (op[i].rc == PFI_ESTATE) {
      c++;
      if (first_c < 0)
        first_c = (long)i;
    } else if (op[i].rc == PFI_EINTR) {
      ns++;
    } else {
      io++;
    }
  }
  printf("%s: written %zu conflicts %zu not-sent %zu failed %zu "
         "first-conflict %ld last-written %ld\n",
         what, w, c, ns, io, first_c, last_w);
}

static int kvbatch(struct pfi_nats *nc, const char *prefix, const char *spec) {
  unsigned long n = 0, win = 0;
  if (sscanf(spec, "%lu,%lu", &n, &win) != 2 || n < 8 || n > 100000)
    return 2;
  struct pfi_nats_kv_op *op = calloc(n, sizeof *op);
  char (*key)[64] = calloc(n, sizeof *key), (*val)[64] = calloc(n, sizeof *val);
  struct pfi_error err;
  if (!op || !key || !val)
    return 1;
  for (size_t i = 0; i < n; i++) {
    snprintf(key[i], sizeof key[i], "%s.%zu", prefix, i);
    snprintf(val[i], sizeof val[i], "one-%zu", i);
    op[i] = (struct pfi_nats_kv_op){key[i], val[i], strlen(val[i]), 0, 0, 0};
  }
  if (pfi_nats_kv_cas_batch(nc, op, n, (unsigned)win, &err) < 0) {
    fprintf(stderr, "probe: %s\n", err.msg);
    return 1;
  }
  tally(op, n, "create");
  /* Read back: each key holds its value at the revision the batch gave. */
  size_t same = 0;
  uint64_t *rev = calloc(n, sizeof *rev);
  for (size_t i = 0; rev && i < n; i++) {
    char *v = NULL;
    uint64_t r = 0;
    rev[i] = op[i].rev;
    if (pfi_nats_kv_get(nc, key[i], &v, NULL, &r, &err) == 1 &&
        strcmp(v, val[i]) == 0 && r == op[i].rev && r > 0)
      same++;
    free(v);
  }
  printf("read back: %zu of %lu at the batch's revisions\n", same, n);
  char **keys = NULL;
  size_t nk = 0;
  char pre[80];
  snprintf(pre, sizeof pre, "%s.", prefix);
  if (pfi_nats_kv_keys(nc, pre, &keys, &nk, &err) == 0)
    printf("listed: %zu keys\n", nk);
  pfi_nats_keys_free(keys, nk);
  /* The same creations again: the keys exist. */
  for (size_t i = 0; i < n; i++)
    op[i].last = 0;
  pfi_nats_kv_cas_batch(nc, op, n, (unsigned)win, &err);
  tally(op, n, "create again");
  /* Another writer moves key 7; then every key is updated on the revision
   * the first batch gave it. */
  uint64_t r7 = 0;
  if (pfi_nats_kv_put(nc, key[7], "other", 5, &r7, &err) < 0) {
    fprintf(stderr, "probe: %s\n", err.msg);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    snprintf(val[i], sizeof val[i], "two-%zu", i);
    op[i] = (struct pfi_nats_kv_op){key[i], val[i], strlen(val[i]), rev[i], 0,
                                    0};
  }
  pfi_nats_kv_cas_batch(nc, op, n, (unsigned)win, &err);
  tally(op, n, "update");
  /* Each key holds what its outcome says: the new value where written,
   * the other writer's on key 7, the first value where not sent. */
  size_t agree = 0;
  for (size_t i = 0; i < n; i++) {
    char *v = NULL;
    uint64_t r = 0;
    char want[64];
    snprintf(want, sizeof want, "%s-%zu", op[i].rc == 0 ? "two" : "one", i);
    if (pfi_nats_kv_get(nc, key[i], &v, NULL, &r, &err) == 1 &&
        strcmp(v, i == 7 ? "other" : want) == 0 &&
        (op[i].rc != 0 || r == op[i].rev))
      agree++;
    free(v);
  }
  printf("values agree with the outcomes: %zu of %lu\n", agree, n);
  /* Plain puts (no expected revision): every key written, key 7 too. */
  for (size_t i = 0; i < n; i++) {
    snprintf(val[i], sizeof val[i], "three-%zu", i);
    op[i] = (struct pfi_nats_kv_op){key[i], val[i], strlen(val[i]),
                                    PFI_NATS_KV_ANY, 0, 0};
  }
  pfi_nats_kv_cas_batch(nc, op, n, (unsigned)win, &err);
  tally(op, n, "put");
  size_t put = 0;
  for (size_t i = 0; i < n; i++) {
    char *v = NULL;
    uint64_t r = 0;
    if (pfi_nats_kv_get(nc, key[i], &v, NULL, &r, &err) == 1 &&
        strcmp(v, val[i]) == 0 && r == op[i].rev)
      put++;
    free(v);
  }
  printf("put read back: %zu of %lu\n", put, n);
  free(rev);
  free(op);
  free(key);
  free(val);
  return 0;
}

static int submany(struct pfi_nats *nc, const char *prefix, const char *ns) {
  unsigned long n = strtoul(ns, NULL, 10);
  if (n < 1 || n > 100000)
    return 2;
  char(*subj)[64] = calloc(n + 1, sizeof *subj);
  const char **sp = calloc(n + 1, sizeof *sp);
  struct pfi_nats_sub *sub = NULL;
  struct pfi_error err;
  if (!subj || !sp)
    return 1;
  for (size_t i = 0; i <= n; i++) {
    snprintf(subj[i], sizeof subj[i], "%s.%zu", prefix, i);
    sp[i] = subj[i];
  }
  if (pfi_nats_subscribe_many(nc, sp, n, &sub, &err) < 0 ||
      pfi_nats_publish_checked(nc, "probe.sync", "x", 1, &err) < 0) {
    fprintf(stderr, "probe: %s\n", err.msg);
    return 1;
  }
  for (size_t i = 0; i <= n; i++) {
    char body[32];
    int k = snprintf(body, sizeof body, "m%zu", i);
    pfi_nats_publish(nc, subj[i], body, (size_t)k, &err);
  }
  size_t got = 0, once = 0, other = 0;
  char *d = NULL, s[96], *seen = calloc(n, 1);
  size_t len = 0, pl = strlen(prefix);
  while (seen && pfi_nats_next(sub, 1.0, &d, &len, s, sizeof s, &err) == 1) {
    /* PREFIX.i with body mi, i < n, not seen before */
    char *end = NULL, want[32];
    unsigned long i = strncmp(s, prefix, pl) == 0 && s[pl] == '.'
                          ? strtoul(s + pl + 1, &end, 10)
                          : n;
    snprintf(want, sizeof want, "m%lu", i);
    if (i < n && end && !*end && strcmp(d, want) == 0 && !seen[i]) {
      seen[i] = 1;
      once++;
    } else {
      other++;
    }
    got++;
    free(d);
  }
  free(seen);
  printf("submany: %zu messages, %zu subjects once each, %zu other\n", got,
         once, other);
  pfi_nats_unsubscribe(sub);
  free(subj);
  free(sp);
  return 0;
}

/* The TLS of the connection, from the environment (tests/fleet/lib.sh
 * FLEET_TLS sets them): PFI_PROBE_NATS_CA, _CERT and _KEY, as --nats-ca,
 * --nats-cert and --nats-key. */
static void probe_tls(struct pfi_nats_opts *o) {
  const char *ca = getenv("PFI_PROBE_NATS_CA");
  const char *cert = getenv("PFI_PROBE_NATS_CERT");
  const char *key = getenv("PFI_PROBE_NATS_KEY");
  o->tls_ca = ca && *ca ? ca : NULL;
  o->tls_cert = cert && *cert ? cert : NULL;
  o->tls_key = key && *key ? key : NULL;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr,
            "usage: %s URL USER PWFILE publish|kvput SUBJ FILE\n"
            "       %s URL USER PWFILE subscribe SUBJ -\n"
            "       %s URL USER PWFILE kvbatch PREFIX N,WINDOW\n"
            "       %s URL USER PWFILE submany PREFIX N\n",
            argv[0], argv[0], argv[0], argv[0]);
    return 2;
  }
  if (strcmp(argv[4], "kvbatch") == 0 || strcmp(argv[4], "submany") == 0) {
    struct pfi_nats_opts o = {argv[1], strcmp(argv[2], "-") ? argv[2] : NULL,
                              strcmp(argv[3], "-") ? argv[3] : NULL,
                              "probe", strcmp(argv[4], "kvbatch") == 0, 0, 5, 0, 0};
    probe_tls(&o);
    struct pfi_nats *nc = NULL;
    struct pfi_error err;
    if (pfi_nats_open(&nc, &o, &err) < 0) {
      fprintf(stderr, "probe: %s\n", err.msg);
      return 1;
    }
    int rc = strcmp(argv[4], "kvbatch") == 0 ? kvbatch(nc, argv[5], argv[6])
                                             : submany(nc, argv[5], argv[6]);
    pfi_nats_close(nc);
    return rc;
  }
  if (strcmp(argv[4], "subscribe") == 0) {
    struct pfi_nats_opts o = {argv[1], strcmp(argv[2], "-") ? argv[2] : NULL,
                              strcmp(argv[3], "-") ? argv[3] : NULL,
                              "probe", 0, 0, 2, 0, 0};
    probe_tls(&o);
    struct pfi_nats *nc = NULL;
    struct pfi_nats_sub *sub = NULL;
    struct pfi_error err;
    int rc = pfi_nats_open(&nc, &o, &err);
    if (rc == 0)
      rc = pfi_nats_subscribe_checked(nc, argv[5], &sub, &err);
    pfi_nats_unsubscribe(sub);
    pfi_nats_close(nc);
    if (rc < 0) {
      fprintf(stderr, "probe: %s\n", err.msg);
      return rc == PFI_ENOPERM ? 3 : 1;
    }
    printf("accepted\n");
    return 0;
  }
  static char data[70000];
  FILE *fp = strcmp(argv[4], "flood") == 0 ? NULL : fopen(argv[6], "rb");
  if (!fp && strcmp(argv[4], "flood") == 0)
    fp = fopen("/dev/null", "rb");
  if (!fp) {
    perror(argv[6]);
    return 2;
  }
  size_t n = fread(data, 1, sizeof data, fp);
  fclose(fp);
  struct pfi_nats_opts o = {argv[1],
                            strcmp(argv[2], "-") ? argv[2] : NULL,
                            strcmp(argv[3], "-") ? argv[3] : NULL,
                            "probe",
                            strcmp(argv[4], "kvput") == 0,
                            0,
                            2,
                            0,
                            0};
  probe_tls(&o);
  struct pfi_nats *nc = NULL;
  struct pfi_error err;
  unsigned long times = 1;
  if (strcmp(argv[4], "flood") == 0) {
    times = strtoul(argv[6], NULL, 10);
    const char *colon = strchr(argv[6], ':');
    if (times < 1 || times > 100000 || !colon)
      return 2;
    fp = fopen(colon + 1, "rb");
    if (!fp) {
      perror(colon + 1);
      return 2;
    }
    n = fread(data, 1, sizeof data, fp);
    fclose(fp);
  }
  int rc = pfi_nats_open(&nc, &o, &err);
  if (rc == 0 && strcmp(argv[4], "flood") == 0) {
    unsigned long sent = 0;
    for (; rc == 0 && sent < times; sent++)
      rc = pfi_nats_publish(nc, argv[5], data, n, &err);
    if (rc == 0)
      rc = pfi_nats_publish_checked(nc, argv[5], data, n, &err);
    printf("flood: %lu sent\n", sent + (rc == 0));
  } else if (rc == 0 && strcmp(argv[4], "publish") == 0)
    rc = pfi_nats_publish_checked(nc, argv[5], data, n, &err);
  else if (rc == 0)
    rc = pfi_nats_kv_put(nc, argv[5], data, n, NULL, &err);
  pfi_nats_close(nc);
  if (rc < 0) {
    fprintf(stderr, "probe: %s\n", err.msg);
    return rc == PFI_ENOPERM || strstr(err.msg, "ermission") ? 3 : 1;
  }
  printf("accepted\n");
  return 0;
}
