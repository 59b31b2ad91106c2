/* Ogg streams that end early. libsndfile decodes an Ogg Vorbis or Opus file cut short up to its
 * last complete page (a recording that crashed, a partial download), but says nothing: the
 * stream's length is not in a header, so it cannot tell. An Ogg stream's last page carries the
 * end-of-stream flag, so what the file's end looks like tells instead (RFC 3533). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/source.h"

enum { PAGE_HEADER = 27, PAGE_MAX = PAGE_HEADER + 255 + 255 * 255 };

/* The page checksum (RFC 3533: CRC-32, polynomial 0x04C11DB7, MSB first, initial value 0, no
 * final XOR) over the page with its checksum field read as zero. */
static uint32_t page_crc(const unsigned char *p, size_t len) {
    uint32_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint32_t)(i >= 22 && i < 26 ? 0 : p[i]) << 24;
        for (int b = 0; b < 8; b++) crc = crc & 0x80000000u ? crc << 1 ^ 0x04C11DB7u : crc << 1;
    }
    return crc;
}

/* The length of the whole page at p (at most `left` bytes of input there), 0 when p is not the
 * start of a complete page whose checksum matches. */
static size_t page_at(const unsigned char *p, size_t left) {
    if (left < PAGE_HEADER || memcmp(p, "OggS", 4) != 0 || p[4] != 0) return 0;
    const size_t nsegs = p[26];
    if (left < PAGE_HEADER + nsegs) return 0;
    size_t len = PAGE_HEADER + nsegs;
    for (size_t i = 0; i < nsegs; i++) len += p[PAGE_HEADER + i];
    if (len > left) return 0;
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
    for (size_t at = got; at-- > 0;) {
        const size_t len = page_at(buf + at, got - at);
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
