/*
 * SHA-256 of every value of an Arrow string/binary array, for ORC's sha256 mask.
 *
 * Why C: the mask hashes every value of a column (millions per file). Per value,
 * Python's hashlib costs about 1.5 us with the hex and upper-casing; DuckDB's and
 * polars-hash's vectorised sha256 about 0.4 us. OpenSSL's SHA-256 (SHA-NI where
 * the CPU has it) called from a loop over the Arrow buffers costs about 0.08 us.
 * The loop runs without the GIL, so stripes can be masked in parallel threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>

static const char HEX_DIGITS[] = "0123456789ABCDEF";

static int read_offset(const unsigned char *offsets, int offset_width, Py_ssize_t index, int64_t *out)
{
    if (offset_width == 4) {
        int32_t value;
        memcpy(&value, offsets + index * 4, 4);
        *out = value;
    } else {
        memcpy(out, offsets + index * 8, 8);
    }
    return *out >= 0;
}

/*
 * digest_values(offsets, offset_width, first, count, data, hexadecimal, width, zero_last_pad, out)
 *
 * Values first .. first+count-1 of the array (offsets as 32- or 64-bit integers). Each
 * output field is `width` bytes: the digest (64 uppercase hex characters, or 32 raw
 * bytes), cut to `width`, or padded with spaces to `width`; with zero_last_pad the last
 * pad byte is 0x00 instead (ORC Java's CHAR(n > 64) output). Returns the fields back
 * to back into `out` (a writable buffer of at least count * width bytes; the caller's, so
 * that a memory pool can reuse it instead of the kernel faulting in fresh pages).
 */
static PyObject *digest_values(PyObject *self, PyObject *args)
{
    Py_buffer offsets, data, output;
    int offset_width, hexadecimal, zero_last_pad;
    Py_ssize_t first, count, width;
    if (!PyArg_ParseTuple(args, "y*inny*pnpw*", &offsets, &offset_width, &first, &count, &data,
                          &hexadecimal, &width, &zero_last_pad, &output))
        return NULL;
    int ok = 0;
    if (offset_width != 4 && offset_width != 8) {
        PyErr_SetString(PyExc_ValueError, "offset_width must be 4 or 8");
        goto done;
    }
    if (first < 0 || count < 0 || width < 0 || (first + count + 1) * offset_width > offsets.len) {
        PyErr_SetString(PyExc_ValueError, "value range outside the offsets buffer");
        goto done;
    }
    if (count > 0 && width > PY_SSIZE_T_MAX / count) {
        PyErr_SetString(PyExc_OverflowError, "output too large");
        goto done;
    }
    if (output.len < count * width) {
        PyErr_SetString(PyExc_ValueError, "output buffer too small");
        goto done;
    }
    unsigned char *out = output.buf;
    const unsigned char *base = offsets.buf;
    const unsigned char *values = data.buf;
    Py_ssize_t data_length = data.len;
    Py_ssize_t digest_length = hexadecimal ? 2 * SHA256_DIGEST_LENGTH : SHA256_DIGEST_LENGTH;
    Py_ssize_t copied = width < digest_length ? width : digest_length;
    int bad_offsets = 0;

    Py_BEGIN_ALLOW_THREADS
    unsigned char digest[SHA256_DIGEST_LENGTH];
    unsigned char text[2 * SHA256_DIGEST_LENGTH];
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t start, end;
        if (!read_offset(base, offset_width, first + i, &start) ||
            !read_offset(base, offset_width, first + i + 1, &end) || end < start || end > data_length) {
            bad_offsets = 1;
            break;
        }
        /* The low-level calls, not the one-shot SHA256(): in OpenSSL 3 that one fetches
         * an EVP implementation on every call, which costs 8x the hashing itself. */
        SHA256_CTX context;
        SHA256_Init(&context);
        SHA256_Update(&context, values + start, (size_t)(end - start));
        SHA256_Final(digest, &context);
        const unsigned char *field = digest;
        if (hexadecimal) {
            for (int k = 0; k < SHA256_DIGEST_LENGTH; k++) {
                text[2 * k] = HEX_DIGITS[digest[k] >> 4];
                text[2 * k + 1] = HEX_DIGITS[digest[k] & 15];
            }
            field = text;
        }
        unsigned char *target = out + i * width;
        memcpy(target, field, (size_t)copied);
        if (width > copied) {
            memset(target + copied, ' ', (size_t)(width - copied));
            if (zero_last_pad)
                target[width - 1] = 0;
        }
    }
    Py_END_ALLOW_THREADS

    if (bad_offsets)
        PyErr_SetString(PyExc_ValueError, "array offsets point outside the data buffer");
    else
        ok = 1;
done:
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&output);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"digest_values", digest_values, METH_VARARGS,
     "digest_values(offsets, offset_width, first, count, data, hexadecimal, width, zero_last_pad, out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sha256", "SHA-256 over the values of Arrow string arrays.", -1, methods,
};

PyMODINIT_FUNC PyInit__sha256(void) { return PyModule_Create(&module); }
