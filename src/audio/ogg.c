/* Ogg streams that end early. libsndfile decodes an Ogg Vorbis or Opus file cut short up to its
 * last complete page (a recording that crashed, a partial download), but says nothing: the
 * stream's length is not in a header, so it cannot tell. An Ogg stream's last page carries the
 * end-of-stream flag, so what the file's end looks like tells instead (RFC 3533). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/source.h"

enum { PAGE_HEADER = 27, PAGE_MAX = PAGE_HEADER + 255 + 255 * 255 };

/* The page checksum (RFC 3533: CRC-32, polynomial 0x04C11DB7, MSB first, initial value 0, no
 * final XOR) over the page with its checksum field read as zero; a byte at a time by table. */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i << 24;
        for (int b = 0; b < 8; b++) r = r & 0x80000000u ? r << 1 ^ 0x04C11DB7u : r << 1;
        crc_table[i] = r;
    }
}

static uint32_t page_crc(const unsigned char *p, size_t len) {
    pthread_once(&crc_once, crc_init);
    uint32_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = crc << 8 ^ crc_table[(crc >> 24) ^ (i >= 22 && i < 26 ? 0 : p[i])];
    return crc;
}

/* The length of the whole page at p (at most `left` bytes of input there), 0 when p is not the
 * start of a complete page whose checksum matches. *budget: bytes the checksums may still read
 * (lowered here): a tail full of false page headers costs a bounded time. */
static size_t page_at(const unsigned char *p, size_t left, size_t *budget) {
    if (left < PAGE_HEADER || memcmp(p, "OggS", 4) != 0 || p[4] != 0) return 0;
    const size_t nsegs = p[26];
    if (left < PAGE_HEADER + nsegs) return 0;
    size_t len = PAGE_HEADER + nsegs;
    for (size_t i = 0; i < nsegs; i++) len += p[PAGE_HEADER + i];
    if (len > left) return 0;
    if (len > *budget) { /* out of budget: no verdict rather than a wrong one */
        *budget = 0;
        return 0;
    }
    *budget -= len;
    const uint32_t stored = (uint32_t)p[22] | (uint32_t)p[23] << 8 | (uint32_t)p[24] << 16 | (uint32_t)p[25] << 24;
    return page_crc(p, len) == stored ? len : 0;
}

void vox_ogg_check_end(const vox_audio_input *in, char *why, size_t n) {
    why[0] = '\0';
    const int64_t size = vox_input_size(in);
    if (size < PAGE_HEADER) return;
    /* The last complete page starts at most two pages before the end: a page cut short follows
     * it, or nothing does. */
    const size_t tail = (size_t)(size < 2 * PAGE_MAX ? size : 2 * PAGE_MAX);
    unsigned char *buf = malloc(tail);
    if (!buf) return;
    const size_t got = vox_input_read_at(in, (uint64_t)size - tail, buf, tail);
    size_t budget = 4 * PAGE_MAX;
    for (size_t at = got; at-- > 0 && budget > 0;) {
        const size_t len = page_at(buf + at, got - at, &budget);
        if (len == 0) continue;
        if (buf[at + 5] & 0x04) break; /* the end-of-stream page: whole (whatever follows it) */
        if (at + len == got)
            snprintf(why, n, "the Ogg stream ends without its end-of-stream page");
        else
            snprintf(why, n, "the file ends part way through an Ogg page");
        break;
    }
    free(buf);
}

/* The codec of an Ogg stream, from its first packet's magic (each codec's own specification). */
static const char *ogg_codec(const unsigned char *p, size_t n) {
    static const struct {
        const char *magic;
        size_t len;
        const char *name;
    } codecs[] = {{"\x01vorbis", 7, "Vorbis"},       {"OpusHead", 8, "Opus"},
                  {"Speex   ", 8, "Speex"},          {"\x7f" "FLAC", 5, "FLAC"},
                  {"\x80theora", 7, "Theora video"}, {"fishead", 8, "Skeleton"},
                  {"\x80kate\0\0\0", 8, "Kate text"}, {"\x01video\0\0", 8, "video"},
                  {"CELT    ", 8, "CELT"},           {"PCM     ", 8, "PCM"}};
    for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++)
        if (n >= codecs[i].len && memcmp(p, codecs[i].magic, codecs[i].len) == 0)
            return codecs[i].name;
    return "an unknown codec";
}

void vox_ogg_describe_unsupported(const vox_audio_input *in, char *why, size_t n) {
    why[0] = '\0';
    /* The first pages of an Ogg file are the streams' beginning-of-stream pages, one a stream,
     * each starting with its codec's identification packet (RFC 3533 section 4). */
    char names[160] = "";
    size_t len = 0;
    uint64_t off = 0;
    for (int page = 0; page < 8; page++) {
        unsigned char h[PAGE_HEADER + 255 + 8];
        if (!vox_input_peek(in, off, h, PAGE_HEADER) || memcmp(h, "OggS", 4) != 0) break;
        if (page > 0 && !(h[5] & 0x02)) break; /* past the beginning-of-stream pages */
        const size_t nsegs = h[26];
        if (!vox_input_peek(in, off + PAGE_HEADER, h + PAGE_HEADER, nsegs)) break;
        size_t body = 0;
        for (size_t i = 0; i < nsegs; i++) body += h[PAGE_HEADER + i];
        const size_t got = vox_input_read_at(in, off + PAGE_HEADER + nsegs, h, body < 8 ? body : 8);
        const char *codec = ogg_codec(h, got);
        if (strcmp(codec, "Vorbis") == 0 || strcmp(codec, "Opus") == 0) return; /* libsndfile's */
        if (!strstr(names, codec) && len < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", codec);
        off += PAGE_HEADER + nsegs + body;
    }
    if (names[0])
        snprintf(why, n, "an Ogg file of %s, with no Vorbis or Opus audio: only those are decoded "
                 "from Ogg", names);
}
