/* Shared by the fuzz harnesses (tests/fuzz/fuzz_*.c): checks that abort, a private temporary
 * directory for parsers that read paths, strict UTF-8 validation, and a reader that cuts the
 * fuzzer's bytes into the pieces of a structured input.
 *
 * Each harness defines LLVMFuzzerTestOneInput (and may define LLVMFuzzerInitialize). Built with
 * libFuzzer (scripts/fuzz.sh) it is a fuzzer; in the normal build standalone_main.c runs each file
 * named on the command line through it once (the ctest replay of the corpus and regressions). */
#ifndef VOX_FUZZ_H
#define VOX_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* A broken invariant: prints it and aborts, which libFuzzer records as a crash. */
#define FUZZ_CHECK(cond, ...)                                                                \
    do {                                                                                     \
        if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                     \
    } while (0)
void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5), noreturn))
#endif
    ;

/* A directory of this process for the files a harness writes: $VOX_FUZZ_TMP if set, else a new
 * directory under /dev/shm (no disk writes, fsync is free) or $TMPDIR or /tmp; removed at exit. */
const char *fuzz_temp_dir(void);
/* Writes data to fuzz_temp_dir()/name (replacing it) and returns the path (static storage, valid
 * until the next call). */
const char *fuzz_write_file(const char *name, const void *data, size_t size);

/* Strict UTF-8 (Unicode table 3-7: no overlongs, surrogates or code points above U+10FFFF), by
 * its own code so that it checks the project's rather than repeats it. Returns n when s[0..n) is
 * valid, else the offset of the first bad byte. */
size_t fuzz_utf8_check(const uint8_t *s, size_t n);

/* A cursor over the fuzzer's bytes. Reads past the end give zeros / empty pieces. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fuzz_reader;

uint8_t fuzz_u8(fuzz_reader *r);
uint32_t fuzz_u32(fuzz_reader *r);
/* The bytes up to the next `sep` (not included; the rest when there is none), as a new
 * NUL-terminated string; *len (may be NULL) its length, which can hold NUL bytes. */
char *fuzz_piece(fuzz_reader *r, uint8_t sep, size_t *len);

#endif
