/* layerstream's C API: open a Llama-family GGUF model on the engine (the
 * streaming pipeline, any tier plan, CPU or CUDA), tokenize, and run many
 * sequences at once (continuous batching), each with its own sampling,
 * streaming its tokens through a callback or a poll.
 *
 * The library is liblayerstream.so (cmake --install puts it in PREFIX/lib,
 * this header in PREFIX/include); it is the engine's serving core
 * (actors/generator.h), which `layerstream serve` stands on too, behind C
 * types. Build a program with:
 *
 *     cc app.c -I PREFIX/include -L PREFIX/lib -llayerstream
 *
 * Errors: every call that can fail returns an ls_status; LS_OK is 0, and
 * ls_last_error() gives the message of this thread's last failure (it names
 * the file, the flag or the length at fault).
 *
 * Threads: calls may come from any thread. A token callback runs on the
 * engine's sampler thread, between steps of every sequence: keep it short,
 * and do not free or wait on a sequence inside it (cancelling is fine).
 *
 * A minimal program (tests/capi/example.c is a whole one):
 *
 *     ls_engine_options o; ls_engine_options_init(&o);
 *     ls_engine* e; if (ls_engine_open(&o, &e)) { puts(ls_last_error()); return 1; }
 *     int32_t ids[256]; size_t n;
 *     ls_tokenize(e, "In the beginning", -1, 1, 0, ids, 256, &n);
 *     ls_sampling s; ls_sampling_init(&s); s.temperature = 0; s.max_tokens = 32;
 *     ls_seq* q; ls_seq_create(e, ids, n, &s, &q);
 *     ls_seq_submit(q, NULL, NULL);             (no callback: poll)
 *     ls_token t[16]; size_t got; int done = 0;
 *     while (!done) ls_seq_poll(q, t, 16, &got, 1000, &done);  (t[i].text: the text)
 *     ls_seq_free(q); ls_engine_free(e);
 */
#ifndef LAYERSTREAM_H
#define LAYERSTREAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LS_API __attribute__((visibility("default")))
#else
#define LS_API
#endif

typedef enum ls_status {
  LS_OK = 0,
  LS_ERR_INVALID_ARGUMENT = 1, /* a null pointer, a value out of range, a wrong state */
  LS_ERR_MODEL = 2,            /* the model file: missing, malformed, unsupported */
  LS_ERR_CONTEXT = 3,          /* the prompt (and max_tokens) do not fit the context */
  LS_ERR_BUSY = 4,             /* more sequences than n_parallel + max_queued */
  LS_ERR_BUFFER_TOO_SMALL = 5, /* the output holds fewer than needed (*n_out says how many) */
  LS_ERR_TIMEOUT = 6,          /* ls_seq_poll / ls_seq_wait: nothing within timeout_ms */
  LS_ERR_ENGINE = 7            /* the engine stopped or failed */
} ls_status;

/* The message of this thread's last failed call ("" if none). Valid until the
 * thread's next call into the library. */
LS_API const char* ls_last_error(void);

/* ---- the engine ----------------------------------------------------------- */

typedef struct ls_engine ls_engine;

typedef struct ls_engine_options {
  const char* model;       /* GGUF path; NULL or "": the default model installed beside the
                              library (PREFIX/share/layerstream/layerstream-default.gguf) */
  const char* backend;     /* "cpu", "cuda" or "auto" (NULL: auto) */
  int32_t threads;         /* CPU threads; 0: all cores */
  uint32_t n_ctx;          /* positions per sequence; 0: the model's, at most 4096 */
  uint32_t n_parallel;     /* sequences decoded at once (key/value slots); 0: 1 */
  uint32_t max_queued;     /* sequences that may wait beyond n_parallel; 0: 64 */
  const char* vram_budget; /* e.g. "24GiB"; NULL: what the device has */
  const char* ram_budget;  /* e.g. "48GiB"; NULL: what is available */
  int32_t cpu_layers;      /* layers the CPU computes from RAM; -1: auto (the default) */
  int32_t print_plan;      /* nonzero: print the tier plan on stderr at open */
} ls_engine_options;

/* Sets every field to its default. */
LS_API void ls_engine_options_init(ls_engine_options* o);
/* Opens the model, plans its tiers and starts the engine. */
LS_API ls_status ls_engine_open(const ls_engine_options* o, ls_engine** out);
/* Cancels what still runs, waits for it, and stops the engine. NULL is fine. */
LS_API void ls_engine_free(ls_engine* e);

LS_API uint32_t ls_engine_n_ctx(const ls_engine* e);
LS_API uint32_t ls_engine_n_vocab(const ls_engine* e);

/* Text to token ids. len < 0: text is NUL-terminated. add_bos: the BOS as the
 * model wants it; parse_special: special tokens written in the text become
 * their ids. Writes at most cap ids; *n_out is the count (when it exceeds
 * cap: LS_ERR_BUFFER_TOO_SMALL, and nothing is written). */
LS_API ls_status ls_tokenize(ls_engine* e, const char* text, ptrdiff_t len, int add_bos,
                             int parse_special, int32_t* out, size_t cap, size_t* n_out);
/* Token ids to text, NUL-terminated. *n_out: the text's length (without the
 * NUL); LS_ERR_BUFFER_TOO_SMALL when cap <= that. */
LS_API ls_status ls_detokenize(ls_engine* e, const int32_t* ids, size_t n, char* out, size_t cap,
                               size_t* n_out);

/* ---- sequences ------------------------------------------------------------ */

typedef struct ls_seq ls_seq;

typedef struct ls_sampling {
  float temperature;    /* <= 0: greedy (the default 0.8) */
  int32_t top_k;        /* <= 0: off (40) */
  float top_p;          /* >= 1: off (0.95) */
  float min_p;          /* <= 0: off (0.05) */
  float repeat_penalty; /* 1: off (1) */
  int32_t repeat_last_n;/* tokens the penalty looks back over; -1: the whole context (64) */
  uint64_t seed;        /* LS_SEED_RANDOM (the default): a random one */
  int32_t max_tokens;   /* tokens to sample at most; -1 (the default): until the context is full */
} ls_sampling;

#define LS_SEED_RANDOM 0xFFFFFFFFu

LS_API void ls_sampling_init(ls_sampling* s);

typedef enum ls_finish {
  LS_FINISH_NONE = 0,      /* still running (or not submitted) */
  LS_FINISH_STOP = 1,      /* an end-of-generation token */
  LS_FINISH_LENGTH = 2,    /* max_tokens, or the context is full */
  LS_FINISH_CANCELLED = 3, /* ls_seq_cancel, or a callback that returned nonzero */
  LS_FINISH_ERROR = 4      /* the engine ended it (ls_last_error after ls_seq_wait says why) */
} ls_finish;

/* One sampled token and the text it completes (UTF-8, possibly empty while a
 * character is split across tokens; not NUL-terminated). id -1: no token,
 * the text still held back at the end (a character the sequence never
 * finished), so that the texts joined are the whole text. An
 * end-of-generation token is not passed on. */
typedef struct ls_token {
  int32_t id;
  const char* text;
  size_t text_len;
} ls_token;

/* Called for each token on the engine's sampler thread; return nonzero to
 * cancel the sequence. The token's text is valid during the call only. */
typedef int (*ls_token_callback)(void* user, const ls_token* token);

/* A sequence over a prompt (token ids, copied), not started yet. */
LS_API ls_status ls_seq_create(ls_engine* e, const int32_t* prompt, size_t n,
                               const ls_sampling* s, ls_seq** out);
/* Optional, between ls_seq_create and ls_seq_submit (the sampling struct
 * stays as it is, so programs built against it keep working): OpenAI's
 * penalties, over the repeat_last_n window after the repeat penalty, as
 * llama.cpp: a token found c times there loses c * frequency + presence
 * (0, 0: off). */
LS_API ls_status ls_seq_set_penalties(ls_seq* q, float frequency, float presence);
/* Optional, between create and submit: bias[i] added to token ids[i]'s
 * logit, for n tokens (copied; replaces an earlier call's; n 0: none); a bias
 * of -100 or less bans the token. Errors: an id outside the vocabulary, a
 * bias that is NaN or above 100. */
LS_API ls_status ls_seq_set_logit_bias(ls_seq* q, const int32_t* ids, const float* bias,
                                       size_t n);
/* Optional, between create and submit: JSON mode (on nonzero): the output
 * is one JSON object, then the end (the server's response_format
 * "json_object"; docs/serve.md). */
LS_API ls_status ls_seq_set_json(ls_seq* q, int on);
/* Optional, between create and submit: structured output: the output is one
 * JSON document valid for schema_json (a JSON schema, as text: the subset of
 * docs/serve.md: type, enum, const, properties, required,
 * additionalProperties, items, minItems, maxItems, minLength, maxLength,
 * anyOf/oneOf that start differently, local $ref), then the end (the
 * server's response_format "json_schema"). Sets JSON mode; NULL clears the
 * schema (JSON mode stays as ls_seq_set_json left it). Errors
 * (LS_ERR_INVALID_ARGUMENT): text that is not JSON, or a keyword outside the
 * subset; ls_last_error names it and its place in the schema. */
LS_API ls_status ls_seq_set_json_schema(ls_seq* q, const char* schema_json);
/* One sampled token's log probability (the model's log-softmax at its step,
 * before the sampling settings) and the n_top most likely tokens there, most
 * likely first. The pointers are valid during the callback only. */
typedef struct ls_logprobs {
  int32_t token;
  float logprob;
  size_t n_top;
  const int32_t* top_ids;
  const float* top_logprobs;
} ls_logprobs;
typedef void (*ls_logprobs_callback)(void* user, const ls_logprobs* lp);
/* Optional, between create and submit: cb gets each token's log
 * probabilities with its n_top (0..20) alternatives, just before the token
 * itself (on the engine's sampler thread; an end-of-generation token gets
 * none). cb NULL: none. */
LS_API ls_status ls_seq_set_logprobs(ls_seq* q, int n_top, ls_logprobs_callback cb, void* user);
/* Start it: it joins the running batch at the next step. cb NULL: its tokens
 * are kept for ls_seq_poll. Errors: LS_ERR_CONTEXT (the prompt and max_tokens
 * past the context; the message says the lengths), LS_ERR_BUSY, ... */
LS_API ls_status ls_seq_submit(ls_seq* q, ls_token_callback cb, void* user);
/* Tokens that came since the last poll (submitted without a callback), up to
 * cap, waiting at most timeout_ms (-1: for ever) for one or for the end.
 * *finished: 1 once the sequence has ended and every token was taken.
 * A token's text stays valid until the next poll or ls_seq_free. */
LS_API ls_status ls_seq_poll(ls_seq* q, ls_token* out, size_t cap, size_t* n_out, int timeout_ms,
                             int* finished);
/* End it at the next step; its slot and key/value blocks are free then. */
LS_API ls_status ls_seq_cancel(ls_seq* q);
/* Wait for the end, at most timeout_ms (-1: for ever); *finish says how it
 * ended, *n_tokens how many tokens were sampled (either may be NULL). */
LS_API ls_status ls_seq_wait(ls_seq* q, int timeout_ms, ls_finish* finish, size_t* n_tokens);
/* Cancels it if it runs, waits for its end, frees it. NULL is fine. */
LS_API void ls_seq_free(ls_seq* q);

#ifdef __cplusplus
}
#endif

#endif /* LAYERSTREAM_H */
