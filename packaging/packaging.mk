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
IMAGES_INPUTS      := packaging/images/build-images.sh packaging/images/pause.c $(wildcard $(IMAGES_BUSYBOX))

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
