# packaging/packaging.mk — included by the top-level Makefile (-include); targets of its own only.
#
#   make images          $(BUILD)/images/{pause.tar,busybox.tar,pause}: the local OCI images
#                        (localhost/cubelet/pause:1, localhost/cubelet/busybox:1), no registry
#   make pause           $(BUILD)/pause: the static sandbox program alone
#   make images-test     tests/images/run.sh (TAP): layouts, digests, reproducibility, pause
#   make images-import   import both archives into a running containerd's k8s.io namespace
#                        (CONTAINERD_ADDRESS, default /run/containerd/containerd.sock)
#
# The images do not depend on VARIANT: pause is always built -static -Os by
# packaging/images/build-images.sh with $(CC) (an ASan pause could not run in an empty image).

IMAGES_DIR         := $(BUILD)/images
IMAGES_BUSYBOX     ?= /bin/busybox
CONTAINERD_ADDRESS ?= /run/containerd/containerd.sock
CTR                ?= ctr
IMAGES_INPUTS      := packaging/images/build-images.sh packaging/images/oci-lib.sh packaging/images/pause.c $(wildcard $(IMAGES_BUSYBOX))

.PHONY: images pause images-test images-import

images: $(IMAGES_DIR)/.built $(BUILD)/pause

pause: $(BUILD)/pause

# One run of the script makes all three files; the stamp stands for them.
$(IMAGES_DIR)/.built: $(IMAGES_INPUTS)
	@echo "  IMAGES  $(IMAGES_DIR)"
	@CC="$(CC)" BUSYBOX="$(IMAGES_BUSYBOX)" packaging/images/build-images.sh $(IMAGES_DIR)
	@touch $@

$(IMAGES_DIR)/pause.tar $(IMAGES_DIR)/busybox.tar $(IMAGES_DIR)/pause: $(IMAGES_DIR)/.built

$(BUILD)/pause: $(IMAGES_DIR)/.built
	@cp $(IMAGES_DIR)/pause $@

images-test:
	@CC="$(CC)" BUSYBOX="$(IMAGES_BUSYBOX)" tests/images/run.sh

images-import: images
	$(CTR) -a $(CONTAINERD_ADDRESS) -n k8s.io images import $(IMAGES_DIR)/pause.tar
	$(CTR) -a $(CONTAINERD_ADDRESS) -n k8s.io images import $(IMAGES_DIR)/busybox.tar

# ---- make deb: the Debian packages (packaging/debian, packaging/README.md) --------------------
#
#   make deb             $(DEB_OUT)/cubelet_$(DEB_VERSION)_<arch>.deb and cubelet-gpu-plugin_...
#   make deb DEB_VERSION=0.2.0      any other version (a test builds a "newer" one this way)
#   make deb-lint        lintian on the two packages
#   make vm-debs         the two builds the VM's package scenario installs and upgrades between
#
# The version is the project's: 0.1.0+git<commits>.<hash> (+dirty for uncommitted changes).
GIT_COMMITS := $(shell git rev-list --count HEAD 2>/dev/null)
GIT_HASH    := $(shell git rev-parse --short HEAD 2>/dev/null)
GIT_DIRTY   := $(shell git diff --quiet HEAD -- 2>/dev/null || echo +dirty)
DEB_VERSION ?= 0.1.0$(if $(GIT_HASH),+git$(GIT_COMMITS).$(GIT_HASH)$(GIT_DIRTY))
DEB_OUT     ?= $(BUILD)/deb
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
VM_DEBS     ?= $(abspath $(VM_DIR))/debs
export VM_DEBS

.PHONY: deb deb-lint vm-debs

deb:
	@echo "  DEB     $(DEB_OUT)/cubelet_$(DEB_VERSION)_$(DEB_ARCH).deb (log: $(DEB_OUT)/build.log)"
	@packaging/build-deb.sh "$(DEB_VERSION)" "$(DEB_OUT)"

deb-lint: deb
	lintian --info --display-info --pedantic $(DEB_OUT)/cubelet_$(DEB_VERSION)_$(DEB_ARCH).deb \
		$(DEB_OUT)/cubelet-gpu-plugin_$(DEB_VERSION)_$(DEB_ARCH).deb

# Two builds of this tree: 1/ the version of `make deb`, 2/ the same + "+vmtest2" (newer to dpkg).
vm-debs:
	@$(MAKE) --no-print-directory deb DEB_OUT=$(VM_DEBS)/1
	@$(MAKE) --no-print-directory deb DEB_OUT=$(VM_DEBS)/2 DEB_VERSION=$(DEB_VERSION)+vmtest2
