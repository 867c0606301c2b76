/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cleanup attributes, defined once for the whole tree (systemd's style). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void cub_freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(cub_freep)

static inline void cub_closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(cub_closep)

static inline void cub_fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(cub_fclosep)

/* Defines `func##p(type **p)` that calls func(*p) when *p is non-NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        func(*p);               \
        }                                       \
        struct __useless_struct_to_allow_trailing_semicolon__

#define TAKE_PTR(p)                        \
        ({                                 \
                __typeof__(p) _ptr_ = (p); \
                (p) = NULL;                \
                _ptr_;                     \
        })

#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -EBADF;   \
                _fd_;            \
        })

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Enough room for any integer type printed in decimal, with sign and NUL. */
#define DECIMAL_STR_MAX(type) (2 + (sizeof(type) <= 1 ? 3 : sizeof(type) <= 2 ? 5 : sizeof(type) <= 4 ? 10 : 20))
