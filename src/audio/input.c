/* Reading an audio input (an open file or a buffer) at an offset, for the sniffs and decoders of
 * src/audio (source.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/source.h"

size_t vox_input_read_at(const vox_audio_input *in, uint64_t off, unsigned char *buf, size_t n) {
    if (in->fd < 0) {
        if (off >= in->size) return 0;
        if (n > in->size - off) n = in->size - off;
        memcpy(buf, in->data + off, n);
        return n;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t got = pread(in->fd, buf + done, n - done, (off_t)(off + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += (size_t)got;
    }
    return done;
}

bool vox_input_peek(const vox_audio_input *in, uint64_t off, unsigned char *buf, size_t n) {
    return vox_input_read_at(in, off, buf, n) == n;
}

int64_t vox_input_size(const vox_audio_input *in) {
    if (in->fd < 0) return (int64_t)in->size;
    struct stat sb;
    return fstat(in->fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1;
}
