/* voxtral_runner's writers on hand-made transcripts: timestamps, cue text, srt/vtt/txt/json
 * layout, and the low-confidence marking (no model needed). */
#define _DEFAULT_SOURCE /* open_memstream, strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/confidence.h"
#include "cli/output.h"
#include "common/utf8.h"
#include "harness.h"

static voxtral_result *result(const char *text, int n_ids) {
    voxtral_result *r = calloc(1, sizeof *r);
    r->text = strdup(text);
    r->n_ids = (size_t)n_ids;
    r->ids = calloc((size_t)n_ids + 1, sizeof *r->ids);
    for (int i = 0; i < n_ids; i++) r->ids[i] = 1000 + i;
    return r;
}

/* Renders t with style s into a new string. */
static char *render(const vox_transcript *t, const vox_output_style *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(vox_write_transcript(f, NULL, t, s) == 0);
    fclose(f);
    return buf;
}

/* Checks that t rendered as format (no header) is want. */
static void check_render(const vox_transcript *t, vox_output_format format, const char *want) {
    vox_output_style s = {.format = format};
    char *out = render(t, &s);
    CHECK_MSG(strcmp(out, want) == 0, "format %d:\n%s\nwanted:\n%s", (int)format, out, want);
    free(out);
}

static void test_timestamps(void) {
    char b[32];
    vox_format_timestamp(b, sizeof b, 0, ',');
    CHECK(strcmp(b, "00:00:00,000") == 0);
    vox_format_timestamp(b, sizeof b, 3.9285625, '.');
    CHECK(strcmp(b, "00:00:03.929") == 0);
    vox_format_timestamp(b, sizeof b, 3599.9996, ',');
    CHECK_MSG(strcmp(b, "01:00:00,000") == 0, "%s", b);
    vox_format_timestamp(b, sizeof b, 100 * 3600 + 61.5, '.');
    CHECK_MSG(strcmp(b, "100:01:01.500") == 0, "%s", b);
    vox_format_timestamp(b, sizeof b, -1, ',');
    CHECK(strcmp(b, "00:00:00,000") == 0);
}

static void test_cue_text(void) {
    char *c = vox_cue_text("  one\ntwo\r\n\nthree\t<b>&amp  ", false);
    CHECK_MSG(strcmp(c, "one two   three <b>&amp") == 0, "'%s'", c);
    free(c);
    c = vox_cue_text("a --> b <i> & c", true);
    CHECK_MSG(strcmp(c, "a --&gt; b &lt;i&gt; &amp; c") == 0, "'%s'", c);
    free(c);
    c = vox_cue_text("\x01\n \x7f", true);
    CHECK(strcmp(c, "") == 0);
    free(c);
}

/* Three segments, the middle one without text. */
static void make_transcript(vox_transcript *t) {
    memset(t, 0, sizeof *t);
    t->path = "dir/talk \"1\".wav";
    t->segmented = true;
    t->audio_seconds = 12.5;
    t->n_segs = 3;
    t->segs = calloc(3, sizeof *t->segs);
    t->segs[0] = (vox_cli_segment){0.3, 3.92856, result(" Hello there.", 2)};
    t->segs[1] = (vox_cli_segment){4.5, 5.0, result("  ", 1)};
    t->segs[2] = (vox_cli_segment){6.25, 11.0, result(" Fish & <chips>\nplease", 3)};
    t->text = strdup("Hello there. Fish & <chips>\nplease");
    t->language = "en";
}

static void test_subtitles(void) {
    vox_transcript t;
    make_transcript(&t);
    check_render(&t, VOX_OUT_SRT, "1\n00:00:00,300 --> 00:00:03,929\nHello there.\n\n"
                                  "2\n00:00:06,250 --> 00:00:11,000\nFish & <chips> please\n\n");
    check_render(&t, VOX_OUT_VTT, "WEBVTT\n\n00:00:00.300 --> 00:00:03.929\nHello there.\n\n"
                                  "00:00:06.250 --> 00:00:11.000\nFish &amp; &lt;chips&gt; please\n\n");
    vox_output_style s = {.format = VOX_OUT_TXT, .header = "x.wav"};
    char *out = render(&t, &s);
    CHECK_MSG(strcmp(out, "==> x.wav <==\n[00:00:00.300 --> 00:00:03.929]  Hello there.\n"
                          "[00:00:06.250 --> 00:00:11.000]  Fish & <chips> please\n") == 0,
              "txt:\n%s", out);
    free(out);

    /* json: one line, the fields, segments with rounded times and their own ids */
    s = (vox_output_style){.format = VOX_OUT_JSON, .header = "ignored"};
    out = render(&t, &s);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
    CHECK(strstr(out, "{\"file\":\"dir/talk \\\"1\\\".wav\",\"text\":\"Hello there. Fish & <chips>\\nplease\","
                      "\"tokens\":[1000,1001,1000,1000,1001,1002],\"language\":\"en\","
                      "\"audio_seconds\":12.5,\"latency_ms\":{") == out);
    CHECK_MSG(strstr(out, "\"segments\":[{\"start\":0.3,\"end\":3.929,\"text\":\"Hello there.\","
                          "\"tokens\":[1000,1001]},{\"start\":4.5,\"end\":5,\"text\":\"\","
                          "\"tokens\":[1000]},{\"start\":6.25,\"end\":11,") != NULL, "%s", out);
    CHECK(strstr(out, "logprobs") == NULL && strstr(out, "ignored") == NULL);
    free(out);

    /* the Unicode line separators (raw in JSON strings, but line breaks to Python's
     * splitlines) come out as \u escapes: the document stays one line for any reader */
    free(t.text);
    t.text = strdup("a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xa9" "d\xe2\x80\xa7" "e");
    t.segmented = false;
    s = (vox_output_style){.format = VOX_OUT_JSON};
    out = render(&t, &s);
    CHECK_MSG(strstr(out, "\"text\":\"a\\u0085b\\u2028c\\u2029d\xe2\x80\xa7" "e\"") != NULL, "%s", out);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
    free(out);
    t.segmented = true;

    /* a file of silence: no cues, a valid empty document */
    for (size_t i = 0; i < t.n_segs; i++) voxtral_result_free(t.segs[i].r);
    t.n_segs = 0;
    s = (vox_output_style){.format = VOX_OUT_VTT};
    out = render(&t, &s);
    CHECK(strcmp(out, "WEBVTT\n\n") == 0);
    free(out);
    s.format = VOX_OUT_SRT;
    out = render(&t, &s);
    CHECK(strcmp(out, "") == 0);
    free(out);
    vox_transcript_free(&t);
}

/* A cue ends after it begins, also for a segment under half a millisecond (a file that short):
 * it is shown for 1 ms; a segment that ends a millisecond or more later keeps its end. */
static void test_short_cues(void) {
    vox_transcript t;
    memset(&t, 0, sizeof t);
    t.path = "tiny.wav";
    t.segmented = true;
    t.audio_seconds = 2.0;
    t.n_segs = 2;
    t.segs = calloc(2, sizeof *t.segs);
    t.segs[0] = (vox_cli_segment){0.0, 0.0002, result(" Hi", 1)};
    t.segs[1] = (vox_cli_segment){1.2344, 1.2346, result(" there", 1)};
    t.text = strdup("Hi there");
    check_render(&t, VOX_OUT_SRT, "1\n00:00:00,000 --> 00:00:00,001\nHi\n\n"
                                  "2\n00:00:01,234 --> 00:00:01,235\nthere\n\n");
    t.segs[1].end = 1.2341; /* both 1.234 once rounded: shown until 1.235 */
    check_render(&t, VOX_OUT_VTT, "WEBVTT\n\n00:00:00.000 --> 00:00:00.001\nHi\n\n"
                                  "00:00:01.234 --> 00:00:01.235\nthere\n\n");
    vox_transcript_free(&t);
}

static void test_whole_file_txt(void) {
    vox_transcript t = {.path = "a.wav", .n_segs = 1};
    t.segs = calloc(1, sizeof *t.segs);
    t.segs[0].r = result(" Text as it is. ", 1);
    t.text = strdup(t.segs[0].r->text);
    vox_output_style s = {.format = VOX_OUT_TXT};
    char *out = render(&t, &s);
    CHECK(strcmp(out, " Text as it is. \n") == 0);
    free(out);
    vox_transcript_free(&t);
}

static void test_marking(void) {
    /* tokens: " The" " cat" "<SPECIAL_7>" " sa" "t" "." ; probabilities 0.9 0.2 0.01 0.9 0.4 0.95 */
    const char *pieces[] = {" The", " cat", "<SPECIAL_7>", " sa", "t", "."};
    size_t lens[6];
    for (int i = 0; i < 6; i++) lens[i] = strlen(pieces[i]);
    const float p[] = {0.9f, 0.2f, 0.01f, 0.9f, 0.4f, 0.95f};
    char *m = vox_mark_words(" The cat sat.", pieces, lens, p, 6, 0.5, VOX_MARK_PLAIN);
    CHECK_MSG(strcmp(m, " The [[cat]] [[sat.]]") == 0, "'%s'", m);
    free(m);
    m = vox_mark_words(" The cat sat.", pieces, lens, p, 6, 0.3, VOX_MARK_COLOUR);
    CHECK_MSG(strcmp(m, " The \033[31mcat\033[0m sat.") == 0, "'%s'", m);
    free(m);
    m = vox_mark_words(" The cat sat.", pieces, lens, p, 6, 0.1, VOX_MARK_PLAIN);
    CHECK(strcmp(m, " The cat sat.") == 0);
    free(m);
    /* the text does not match the tokens: unmarked */
    m = vox_mark_words(" The dog sat.", pieces, lens, p, 6, 0.5, VOX_MARK_PLAIN);
    CHECK(strcmp(m, " The dog sat.") == 0);
    free(m);

    /* "é" split over two tokens, and a lone continuation byte the decoder turned into U+FFFD */
    const char *pieces2[] = {" caf", "\xC3", "\xA9", " \x80", "ok"};
    size_t lens2[] = {4, 1, 1, 2, 2};
    const float p2[] = {0.9f, 0.9f, 0.1f, 0.9f, 0.2f};
    m = vox_mark_words(" caf\xC3\xA9 " VOX_UTF8_REPLACEMENT "ok", pieces2, lens2, p2, 5, 0.5, VOX_MARK_PLAIN);
    CHECK_MSG(strcmp(m, " [[caf\xC3\xA9]] [[" VOX_UTF8_REPLACEMENT "ok]]") == 0, "'%s'", m);
    free(m);
    /* empty text and no tokens */
    m = vox_mark_words("", NULL, NULL, NULL, 0, 0.5, VOX_MARK_PLAIN);
    CHECK(strcmp(m, "") == 0);
    free(m);
}

static void test_utf8(void) {
    char *r = vox_utf8_repair_dup("a\xE2\x82\xAC\xE2\x82z\xFF\xF0\x9F\x98\x80", 12);
    CHECK_MSG(strcmp(r, "a\xE2\x82\xAC" VOX_UTF8_REPLACEMENT "z" VOX_UTF8_REPLACEMENT
                        "\xF0\x9F\x98\x80") == 0, "%s", r);
    free(r);
    r = vox_utf8_repair_dup("\xED\xA0\x80", 3); /* a surrogate: three replacements */
    CHECK(strcmp(r, VOX_UTF8_REPLACEMENT VOX_UTF8_REPLACEMENT VOX_UTF8_REPLACEMENT) == 0);
    free(r);
}

int main(void) {
    test_timestamps();
    test_cue_text();
    test_subtitles();
    test_short_cues();
    test_whole_file_txt();
    test_marking();
    test_utf8();
    return test_finish("test_cli_output");
}
