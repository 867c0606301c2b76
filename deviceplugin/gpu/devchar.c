/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /dev/char/<major>:<minor> links for the NVIDIA device nodes.
 *
 * Under the systemd cgroup driver runc hands a container's device rules to
 * systemd as DeviceAllow=/dev/char/<major>:<minor>. systemd resolves those
 * paths each time it rebuilds the unit's device program (at every
 * `systemctl daemon-reload`), and a path that does not exist is dropped:
 * the running container loses its GPU (NVIDIA's notice "NVML lost after
 * daemon-reload"). udev makes the links for most devices, but the NVIDIA
 * driver's nodes are made by nvidia-modprobe, which makes none. The plugin
 * makes them, as udev would ("../nvidia0"), and checks them at each NVML
 * start.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/util/cleanup.h"
#include "agent/util/log.h"
#include "deviceplugin/gpu/gpu-internal.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* one node: <dev>/<rel> is a character device → <dev>/char/M:m → "../<rel>".
 * 1 when the link was made or fixed, 0 when it was right, -errno. */
static int link_one(int dev_fd, const char *rel, CubError *err) {
        char name[32], want[PATH_MAX], have[PATH_MAX], tmp[64];
        struct stat sb;
        ssize_t n;

        if (fstatat(dev_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : cub_err_set(err, errno, "cannot stat '/dev/%s': %m", rel);
        if (!S_ISCHR(sb.st_mode))
                return 0;
        (void) snprintf(name, sizeof(name), "char/%u:%u", major(sb.st_rdev), minor(sb.st_rdev));
        if (snprintf(want, sizeof(want), "../%s", rel) >= (int) sizeof(want))
                return cub_err_set(err, ENAMETOOLONG, "'/dev/%s': name too long", rel);
        n = readlinkat(dev_fd, name, have, sizeof(have) - 1);
        if (n >= 0) {
                have[n] = '\0';
                if (strcmp(have, want) == 0)
                        return 0;
        } else if (errno == EINVAL)
                /* udev's own or an admin's node or file: not ours to replace */
                return cub_err_set(err, EEXIST, "'/dev/%s' exists and is not a link; '/dev/%s' has none", name, rel);
        else if (errno != ENOENT)
                return cub_err_set(err, errno, "cannot read '/dev/%s': %m", name);
        /* made beside it and renamed over it: never a moment without a link */
        (void) snprintf(tmp, sizeof(tmp), "char/.%s.tmp", name + strlen("char/"));
        (void) unlinkat(dev_fd, tmp, 0);
        if (symlinkat(want, dev_fd, tmp) < 0)
                return cub_err_set(err, errno, "cannot make '/dev/%s': %m", tmp);
        if (renameat(dev_fd, tmp, dev_fd, name) < 0) {
                int e = errno;

                (void) unlinkat(dev_fd, tmp, 0);
                return cub_err_set(err, e, "cannot rename '/dev/%s' to '/dev/%s': %m", tmp, name);
        }
        cub_log(LOG_INFO, "made '/dev/%s' -> '%s'%s", name, want, n >= 0 ? " (it pointed elsewhere)" : "");
        return 1;
}

/* link_one, counted; an error past the first is logged, the first kept */
static void try_one(int dev_fd, const char *rel, unsigned *made, int *first, CubError *err) {
        CubError e = { 0 };
        int r = link_one(dev_fd, rel, &e);

        if (r > 0)
                (*made)++;
        else if (r < 0 && *first == 0) {
                *first = r;
                if (err)
                        *err = e;
        } else if (r < 0)
                cub_log(LOG_WARNING, "%s", e.msg);
}

int gpu_devchar_links(const char *dev_root, unsigned *ret_made, CubError *err) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int dev_fd = -EBADF;
        _cleanup_(closedirp) DIR *d = NULL, *caps = NULL;
        struct dirent *de;
        unsigned made = 0;
        int first = 0;

        if (asprintf(&path, "%s%sdev", dev_root, dev_root[strlen(dev_root) - 1] == '/' ? "" : "/") < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        dev_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dev_fd < 0)
                return cub_err_set(err, errno, "cannot open '%s': %m", path);
        if (mkdirat(dev_fd, "char", 0755) < 0 && errno != EEXIST)
                return cub_err_set(err, errno, "cannot make '%s/char': %m", path);
        d = fdopendir(fcntl(dev_fd, F_DUPFD_CLOEXEC, 3));
        if (!d)
                return cub_err_set(err, errno, "cannot list '%s': %m", path);
        while ((de = readdir(d))) {
                if (strncmp(de->d_name, "nvidia", 6) != 0)
                        continue;
                if (strcmp(de->d_name, "nvidia-caps") == 0) {
                        int fd = openat(dev_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                        caps = fd >= 0 ? fdopendir(fd) : NULL;
                        if (!caps && fd >= 0)
                                (void) close(fd);
                        continue;
                }
                try_one(dev_fd, de->d_name, &made, &first, err);
        }
        while (caps && (de = readdir(caps))) {
                char rel[sizeof("nvidia-caps/") + sizeof(de->d_name)];

                if (strncmp(de->d_name, "nvidia-cap", 10) != 0)
                        continue;
                (void) snprintf(rel, sizeof(rel), "nvidia-caps/%s", de->d_name);
                try_one(dev_fd, rel, &made, &first, err);
        }
        if (ret_made)
                *ret_made = made;
        return first;
}
