/* The SimHash kernel of harvestman.simhash, compiled.
 *
 * simhash64() runs for every crawled page. In numpy it takes about 40 array calls, which cost
 * 150-200 µs a page inside a crawl (cache-cold dispatch, not arithmetic); this loop does the
 * same work in one pass, about 5 µs for an 8 KB sample. It must give exactly the values of
 * the numpy reference, harvestman.simhash._simhash64_numpy (tests compare them): words are
 * runs of word bytes, a word is its first and last 8 bytes, features are word 3-grams mixed
 * by the splitmix64 finalizer, and bit i is set when more than half of the features have it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HEAD_WEIGHT 0x27D4EB2F165667C6ULL
#define K1 0x9E3779B97F4A7C15ULL
#define K2 0xC2B2AE3D27D4EB4FULL
#define MIX1 0xBF58476D1CE4E5B9ULL
#define MIX2 0x94D049BB133111EBULL
#define LOW_BIT_OF_EACH_BYTE 0x0101010101010101ULL

/* A UTF-8 byte's word value: ASCII letters (lower-cased) and digits, and every byte of a
 * non-ASCII character, are word bytes; everything else separates words (0). */
static unsigned char word_byte[256];

static void init_word_bytes(void) {
    for (int b = 0; b < 256; b++) {
        unsigned char v = 0;
        if (b >= 0x80 || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z'))
            v = (unsigned char)b;
        else if (b >= 'A' && b <= 'Z')
            v = (unsigned char)(b | 0x20);
        word_byte[b] = v;
    }
}

/* The little-endian value of the n (<= 8) translated bytes at p. */
static inline uint64_t read_word_bytes(const unsigned char *p, Py_ssize_t n) {
    uint64_t value = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        value |= (uint64_t)word_byte[p[k]] << (8 * k);
    return value;
}

static inline uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t f = a * K1 + b * K2 + c;
    f ^= f >> 30;
    f *= MIX1;
    f ^= f >> 27;
    f *= MIX2;
    f ^= f >> 31;
    return f;
}

/* Bit-sliced counting: planes[j] holds bit 8b+j of the features as the count in byte lane b;
 * lanes are emptied into counts before 255 features can overflow them. */
typedef struct {
    uint64_t planes[8];
    uint64_t counts[64];
    Py_ssize_t features;
    int pending;
} Tally;

static void tally_flush(Tally *t) {
    for (int j = 0; j < 8; j++) {
        uint64_t p = t->planes[j];
        for (int b = 0; b < 8; b++)
            t->counts[8 * b + j] += (p >> (8 * b)) & 0xFF;
        t->planes[j] = 0;
    }
    t->pending = 0;
}

static inline void tally_add(Tally *t, uint64_t f) {
    for (int j = 0; j < 8; j++)
        t->planes[j] += (f >> j) & LOW_BIT_OF_EACH_BYTE;
    t->features++;
    if (++t->pending == 255)
        tally_flush(t);
}

static uint64_t fingerprint(const unsigned char *data, Py_ssize_t size) {
    Tally tally;
    memset(&tally, 0, sizeof tally);
    uint64_t w0 = 0, w1 = 0;
    Py_ssize_t words = 0, i = 0;
    while (i < size) {
        if (!word_byte[data[i]]) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < size && word_byte[data[i]])
            i++;
        Py_ssize_t length = i - start, kept = length < 8 ? length : 8;
        Py_ssize_t tail_start = length > 8 ? i - 8 : start;
        uint64_t word = read_word_bytes(data + start, kept) * HEAD_WEIGHT
                        + read_word_bytes(data + tail_start, kept);
        if (++words >= 3)
            tally_add(&tally, mix(w0, w1, word));
        w0 = w1;
        w1 = word;
    }
    if (words == 0)
        return 0;
    if (words == 1) /* one feature: the word padded with two empty ones */
        tally_add(&tally, mix(w1, 0, 0));
    else if (words == 2)
        tally_add(&tally, mix(w0, w1, 0));
    tally_flush(&tally);
    uint64_t half = (uint64_t)(tally.features / 2), result = 0;
    for (int bit = 0; bit < 64; bit++)
        if (tally.counts[bit] > half)
            result |= 1ULL << bit;
    return result;
}

static PyObject *simhash64_utf8(PyObject *module, PyObject *arg) {
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    /* The GIL stays held: releasing it would cost more than these few microseconds. */
    uint64_t value = fingerprint((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(value);
}

static PyMethodDef methods[] = {
    {"simhash64_utf8", simhash64_utf8, METH_O,
     "simhash64_utf8(data, /)\n--\n\n"
     "The 64-bit SimHash of UTF-8 text (bytes or any buffer), as harvestman.simhash.simhash64."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "harvestman._simhash", "The compiled SimHash kernel.", -1, methods,
};

PyMODINIT_FUNC PyInit__simhash(void) {
    init_word_bytes();
    return PyModule_Create(&module);
}
