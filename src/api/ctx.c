/* ctx.c - the public API (lms.h) over the residency module.  Each entry
 * validates its arguments, takes the context lock, and calls one function
 * of the core; failures leave their text in the context's last error. */
#include "api/ctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/rank.h"

static lms_status_t fail(lms_ctx_t *ctx, lms_status_t st, const char *fmt,
                         const char *arg) {
  char msg[LMS__ERRBUF];
  snprintf(msg, sizeof msg, fmt, arg);
  memcpy(ctx->err, msg, sizeof msg);
  return st;
}

/* A context on `dev` (it takes the device, and destroys it on failure), or
 * on the device the options name when dev is NULL. */
static lms_status_t ctx_create(const lms_options_t *opts, lms_dev_t *dev,
                               lms_ctx_t **out) {
  if (out == NULL) {
    if (dev != NULL) dev->ops->destroy(dev);
    return LMS_ERR_INVALID;
  }
  *out = NULL;
  lms_options_t *defaults = NULL;
  if (opts == NULL) {
    LMS_CHECK(lms_options_create(&defaults));
    lms_status_t st = lms_options_load_env(defaults);
    if (st != LMS_OK) {
      fprintf(stderr, "lms: %s\n", lms_options_error(defaults));
      lms_options_destroy(defaults);
      if (dev != NULL) dev->ops->destroy(dev);
      return st;
    }
    opts = defaults;
  }
  lms_ctx_t *ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) {
    lms_options_destroy(defaults);
    if (dev != NULL) dev->ops->destroy(dev);
    return LMS_ERR_HOST_OOM;
  }
  lms__opts_copy(&ctx->opts, &opts->v);
  lms_options_destroy(defaults);
  pthread_mutex_init(&ctx->lock, NULL);
  lms__log_configure(ctx->opts.log.level, ctx->opts.log.subsys,
                     ctx->opts.log_file);

  lms_status_t st;
  if (dev != NULL)
    ctx->dev = dev;
  else
    LMS_CHECK_GOTO(lms__dev_open(&ctx->opts, &ctx->dev, ctx->err), st, fail);
  size_t free_b = 0, total_b = 0;
  st = ctx->dev->ops->mem_info(ctx->dev, &free_b, &total_b);
  if (st != LMS_OK) {
    lms__errf(ctx->err, "mem_info: %s", ctx->dev->last_error);
    goto fail;
  }
  uint64_t budget = ctx->opts.gpu_limit ? ctx->opts.gpu_limit : total_b;
  if (budget > total_b) budget = total_b;
  lms__swap_config_t cfg = {
      .placement = {.lms_kb = ctx->opts.lms_kb,
                    .frac = ctx->opts.lms_frac,
                    .capacity = budget},
      .host_limit = ctx->opts.host_limit,
      .node_host_limit = ctx->opts.node_host_limit,
      .policy = ctx->opts.policy,
      .piece = ctx->opts.piece_size,
      .piece_div = ctx->opts.piece_div,
  };
  LMS_CHECK_GOTO(lms__swap_init(&ctx->swap, ctx->dev, &cfg, ctx->err), st, fail);
  if (cfg.piece > 0 && ctx->dev->ops->dev_map == NULL)
    LMS_LOG(WARN, SWAP, "--piece-size: the %s device does not map memory "
            "into address ranges; chunks stay whole", ctx->dev->ops->name);
  if (ctx->dev->ops->set_budget != NULL)
    ctx->dev->ops->set_budget(ctx->dev, budget);
  st = lms__plan_create(&ctx->swap, &ctx->opts, &ctx->plan);
  if (st != LMS_OK) {
    lms__errf(ctx->err, "no host memory for the planner");
    lms__swap_fini(&ctx->swap);
    goto fail;
  }
  LMS_LOG(INFO, CORE, "context on the %s device: budget %llu bytes, -lms %lld, "
          "-lms_frac %.3f", ctx->dev->ops->name, (unsigned long long)budget,
          (long long)ctx->opts.lms_kb, ctx->opts.lms_frac);
  *out = ctx;
  return LMS_OK;

fail:
  /* No context comes back to hold the message, so it goes to stderr. */
  fprintf(stderr, "lms: %s\n", ctx->err);
  if (ctx->dev != NULL) ctx->dev->ops->destroy(ctx->dev);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
  return st;
}

lms_status_t lms_ctx_create(const lms_options_t *opts, lms_ctx_t **out) {
  return ctx_create(opts, NULL, out);
}

lms_status_t lms__ctx_create_on(const lms_options_t *opts, lms_dev_t *dev,
                                lms_ctx_t **out) {
  if (dev == NULL) return LMS_ERR_INVALID;
  return ctx_create(opts, dev, out);
}

static lms_status_t write_stats_file(lms_ctx_t *ctx) {
  if (ctx->opts.stats == NULL || ctx->opts.stats[0] == '\0') return LMS_OK;
  /* Note [One lms per rank] in core/rank.h: %p and %r. */
  char path[LMS__PATH_MAX + 64];
  lms__path_expand(ctx->opts.stats, path, sizeof path);
  lms_stats_t st;
  lms__swap_stats(&ctx->swap, &st);
  char buf[8192];
  size_t n = lms_stats_format_json(&st, buf, sizeof buf);
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    LMS_LOG(ERROR, CORE, "--stats: cannot write '%s': %s", path, strerror(errno));
    return LMS_ERR_INVALID;
  }
  size_t w = fwrite(buf, 1, n < sizeof buf ? n : sizeof buf - 1, f);
  int bad = fclose(f) != 0 || w == 0;
  return bad ? LMS_ERR_INVALID : LMS_OK;
}

lms_status_t lms_ctx_destroy(lms_ctx_t *ctx) {
  if (ctx == NULL) return LMS_OK;
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = lms__swap_sync(&ctx->swap);
  /* The context and its last error go with it: say why here. */
  if (st != LMS_OK)
    LMS_LOG(ERROR, CORE, "lms_ctx_destroy: %s", ctx->err);
  lms_status_t wst = write_stats_file(ctx);
  char terr[LMS__ERRBUF] = "";
  lms_status_t tst = lms__plan_destroy(ctx->plan, terr);
  if (tst != LMS_OK) {
    fprintf(stderr, "lms: --trace: %s\n", terr);
    if (wst == LMS_OK) wst = tst;
  }
  lms__swap_fini(&ctx->swap);
  ctx->dev->ops->destroy(ctx->dev);
  pthread_mutex_unlock(&ctx->lock);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
  return st != LMS_OK ? st : wst;
}

const char *lms_ctx_last_error(lms_ctx_t *ctx) {
  return ctx ? ctx->err : "no context";
}

const char *lms_ctx_device_name(const lms_ctx_t *ctx) {
  return ctx ? ctx->dev->ops->name : "none";
}

/* ---- Streams --------------------------------------------------------------- */

static lms_status_t dev_call(lms_ctx_t *ctx, lms_status_t st, const char *what) {
  if (st != LMS_OK && st != LMS_NOT_READY)
    lms__errf(ctx->err, "%s: %s", what, ctx->dev->last_error);
  return st;
}

lms_status_t lms_stream_create(lms_ctx_t *ctx, lms_stream_t *out) {
  if (ctx == NULL || out == NULL) return LMS_ERR_INVALID;
  return dev_call(ctx, ctx->dev->ops->stream_create(ctx->dev, out),
                  "lms_stream_create");
}

lms_status_t lms_stream_destroy(lms_ctx_t *ctx, lms_stream_t stream) {
  if (ctx == NULL || stream == NULL) return LMS_ERR_INVALID;
  return dev_call(ctx, ctx->dev->ops->stream_destroy(ctx->dev, stream),
                  "lms_stream_destroy");
}

lms_status_t lms_stream_sync(lms_ctx_t *ctx, lms_stream_t stream) {
  if (ctx == NULL || stream == NULL) return LMS_ERR_INVALID;
  return dev_call(ctx, ctx->dev->ops->stream_sync(ctx->dev, stream),
                  "lms_stream_sync");
}

lms_status_t lms_compute(lms_ctx_t *ctx, lms_stream_t stream, uint64_t ns) {
  if (ctx == NULL || stream == NULL) return LMS_ERR_INVALID;
  lms_status_t st = dev_call(ctx, ctx->dev->ops->compute(ctx->dev, stream, ns),
                             "lms_compute");
  if (st == LMS_OK) {
    pthread_mutex_lock(&ctx->lock);
    lms__plan_on_compute(ctx->plan, ns);
    pthread_mutex_unlock(&ctx->lock);
  }
  return st;
}

lms_status_t lms_step_begin(lms_ctx_t *ctx) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  pthread_mutex_lock(&ctx->lock);
  /* Steps seen so far were single acquires (setup, say): learning starts
   * over with the program's own steps. */
  if (!ctx->explicit_steps) lms__plan_relearn(ctx->plan);
  ctx->explicit_steps = 1;
  lms_status_t st = lms__plan_step(ctx->plan);
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_schedule_step(lms_ctx_t *ctx, const lms_step_ref_t *refs,
                               size_t n, uint64_t compute_ns) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  if (refs == NULL && n > 0)
    return fail(ctx, LMS_ERR_INVALID, "%s: refs is NULL", "lms_schedule_step");
  if (n > 65536)
    return fail(ctx, LMS_ERR_INVALID, "%s: more than 65536 chunks in one "
                "step", "lms_schedule_step");
  lms_chunk_t **chunks = malloc((n ? n : 1) * sizeof *chunks);
  unsigned *access = malloc((n ? n : 1) * sizeof *access);
  if (chunks == NULL || access == NULL) {
    free(chunks);
    free(access);
    return fail(ctx, LMS_ERR_HOST_OOM, "%s: no host memory", "lms_schedule_step");
  }
  lms_status_t st = LMS_OK;
  for (size_t i = 0; i < n && st == LMS_OK; i++) {
    if (!lms__swap_is_chunk(refs[i].chunk))
      st = fail(ctx, LMS_ERR_INVALID, "%s: a reference is not a live chunk",
                "lms_schedule_step");
    else if ((refs[i].access & LMS_ACCESS_RW) == 0 ||
             (refs[i].access & ~(LMS_ACCESS_RW | LMS_ACCESS_OVERWRITE)) != 0 ||
             ((refs[i].access & LMS_ACCESS_OVERWRITE) &&
              !(refs[i].access & LMS_ACCESS_WRITE)))
      st = fail(ctx, LMS_ERR_INVALID, "%s: access must be LMS_ACCESS_READ, "
                "LMS_ACCESS_WRITE or both, and LMS_ACCESS_OVERWRITE only with "
                "LMS_ACCESS_WRITE", "lms_schedule_step");
    chunks[i] = refs[i].chunk;
    access[i] = refs[i].access;
  }
  if (st == LMS_OK) {
    pthread_mutex_lock(&ctx->lock);
    st = lms__plan_declare(ctx->plan, chunks, access, n, compute_ns);
    pthread_mutex_unlock(&ctx->lock);
    if (st != LMS_OK)
      fail(ctx, st, "%s: no host memory for the schedule", "lms_schedule_step");
  }
  free(chunks);
  free(access);
  return st;
}

lms_status_t lms_schedule_clear(lms_ctx_t *ctx) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  pthread_mutex_lock(&ctx->lock);
  lms__plan_declare_clear(ctx->plan);
  pthread_mutex_unlock(&ctx->lock);
  return LMS_OK;
}

uint64_t lms_now_ns(lms_ctx_t *ctx) {
  return ctx ? ctx->dev->ops->now_ns(ctx->dev) : 0;
}

/* ---- Chunks ------------------------------------------------------------------ */

#define LMS__CHECK_CHUNK(ctx, c, fn)                                          \
  do {                                                                        \
    if (!lms__swap_is_chunk(c))                                               \
      return fail(ctx, LMS_ERR_INVALID, "%s: not a live chunk", fn);          \
  } while (0)

lms_status_t lms_alloc(lms_ctx_t *ctx, size_t size, lms_chunk_t **out) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  if (out == NULL) return fail(ctx, LMS_ERR_INVALID, "%s: out is NULL", "lms_alloc");
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = lms__swap_alloc(&ctx->swap, size, out);
  if (st == LMS_OK && lms__plan_on_alloc(ctx->plan, *out) != LMS_OK) {
    lms__swap_free(&ctx->swap, *out);
    *out = NULL;
    st = LMS_ERR_HOST_OOM;
    lms__errf(ctx->err, "lms_alloc: no host memory for the planner's entry");
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_free(lms_ctx_t *ctx, lms_chunk_t *chunk) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  if (chunk == NULL) return LMS_OK;
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = LMS_ERR_INVALID;
  if (!lms__swap_is_chunk(chunk))
    fail(ctx, st, "%s: not a live chunk", "lms_free");
  else if (chunk->pins > 0)
    st = lms__swap_free(&ctx->swap, chunk); /* refuses: still acquired */
  else {
    lms__plan_on_free(ctx->plan, chunk);
    st = lms__swap_free(&ctx->swap, chunk);
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_acquire(lms_ctx_t *ctx, lms_chunk_t *chunk,
                         lms_stream_t stream, unsigned access, void **dptr) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  LMS__CHECK_CHUNK(ctx, chunk, "lms_acquire");
  if (stream == NULL || dptr == NULL)
    return fail(ctx, LMS_ERR_INVALID, "%s: stream and dptr must not be NULL",
                "lms_acquire");
  if ((access & LMS_ACCESS_RW) == 0 ||
      (access & ~(LMS_ACCESS_RW | LMS_ACCESS_OVERWRITE)) != 0 ||
      ((access & LMS_ACCESS_OVERWRITE) && !(access & LMS_ACCESS_WRITE)))
    return fail(ctx, LMS_ERR_INVALID,
                "%s: access must be LMS_ACCESS_READ, LMS_ACCESS_WRITE or both, "
                "and LMS_ACCESS_OVERWRITE only with LMS_ACCESS_WRITE",
                "lms_acquire");
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = LMS_OK;
  if (!ctx->explicit_steps) st = lms__plan_acquire_step(ctx->plan);
  if (st == LMS_OK)
    st = lms__swap_acquire(&ctx->swap, chunk, stream, access, dptr);
  if (st == LMS_OK) lms__plan_on_acquire(ctx->plan, chunk, access);
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_release(lms_ctx_t *ctx, lms_chunk_t *chunk,
                         lms_stream_t stream) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  LMS__CHECK_CHUNK(ctx, chunk, "lms_release");
  if (stream == NULL)
    return fail(ctx, LMS_ERR_INVALID, "%s: stream must not be NULL", "lms_release");
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = lms__swap_release(&ctx->swap, chunk, stream);
  if (st == LMS_OK && chunk->pins == 0 && chunk->free_on_release) {
    lms__plan_on_free(ctx->plan, chunk);
    st = lms__swap_free(&ctx->swap, chunk);
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_discard(lms_ctx_t *ctx, lms_chunk_t *chunk) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  LMS__CHECK_CHUNK(ctx, chunk, "lms_discard");
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = lms__swap_discard(&ctx->swap, chunk);
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_chunk_lookup(lms_ctx_t *ctx, const void *addr,
                              lms_chunk_t **out, size_t *offset) {
  if (ctx == NULL || out == NULL) return LMS_ERR_INVALID;
  pthread_mutex_lock(&ctx->lock);
  lms__reg_entry_t *e = lms__registry_find(&ctx->swap.registry, addr);
  if (e != NULL) {
    *out = e->owner;
    if (offset) *offset = (uintptr_t)addr - e->start;
  }
  pthread_mutex_unlock(&ctx->lock);
  if (e == NULL)
    return fail(ctx, LMS_ERR_INVALID, "%s: address is in no live chunk",
                "lms_chunk_lookup");
  return LMS_OK;
}

size_t lms_chunk_size(const lms_chunk_t *chunk) {
  return lms__swap_is_chunk(chunk) ? chunk->size : 0;
}

int lms_chunk_host_homed(const lms_chunk_t *chunk) {
  return lms__swap_is_chunk(chunk) ? chunk->host_homed : 0;
}

int lms_chunk_resident(lms_ctx_t *ctx, const lms_chunk_t *chunk) {
  if (ctx == NULL || !lms__swap_is_chunk(chunk)) return 0;
  pthread_mutex_lock(&ctx->lock);
  int r = chunk->dptr != NULL;
  if (chunk->npieces > 0) { /* Note [Chunks of pieces] in residency.c */
    r = 1;
    for (uint32_t i = 0; i < chunk->npieces; i++)
      r = r && chunk->pieces[i] != NULL && chunk->pieces[i]->dptr != NULL;
  }
  pthread_mutex_unlock(&ctx->lock);
  return r;
}

lms_status_t lms_stats_get(lms_ctx_t *ctx, lms_stats_t *out) {
  if (ctx == NULL || out == NULL) return LMS_ERR_INVALID;
  pthread_mutex_lock(&ctx->lock);
  lms__swap_stats(&ctx->swap, out);
  pthread_mutex_unlock(&ctx->lock);
  return LMS_OK;
}
