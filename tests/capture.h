/* capture.h — collect what the library writes to stderr (warnings, log lines) for a test to inspect. */
#ifndef FOLD_TEST_CAPTURE_H
#define FOLD_TEST_CAPTURE_H

/* Start sending stderr to a temporary file (exits 2 if none can be made). */
void capture_begin(void);
/* Stop capturing; the captured text (static, NUL-terminated, up to 64 KiB). */
const char *capture_end(void);

#endif
