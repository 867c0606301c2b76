# VM harness (tests/vm): real cgroup v2 + systemd + containerd under qemu.
# Included by the top Makefile.
#
#   make vm-deps    install qemu, kmod, cpio, busybox-static, containerd, runc (root; idempotent)
#   make vm-image   Debian's kernel + a busybox initramfs into $(VM_DIR)
#   make vm-test    every scenario in tests/vm/scenarios, each in a fresh VM: TAP,
#                   then "N passed, N failed"
#   make vm-run VM_SCENARIO=path/to/x.sh   one scenario, its TAP on stdout
#   make vm-shell   a root shell in the VM on this terminal (Ctrl-A X quits)
#   make vm-clean   remove $(VM_DIR)
#
# Knobs (environment or make variables): VM_MEM (2048M), VM_TIMEOUT (600 s a
# VM), VM_SCENARIOS (name patterns), VM_FILES, VM_SMP, VM_APPEND, VM_QEMU_ARGS;
# see tests/vm/README.md.

VM_DIR ?= $(BUILD)/vm
VM_SCENARIO ?=
export VM_DIR

VM_IMAGE_FILES := $(VM_DIR)/vmlinuz $(VM_DIR)/initrd.img

.PHONY: vm-deps vm-image vm-tools vm-test vm-run vm-shell vm-clean

# The scenarios' static reader of cubelet's status socket (tests/vm/tools,
# lib/cubelet.sh's status_json): a poll costs one exec, no dynamic linking.
VM_TOOLS := $(BUILD)/tests/vm/status-fetch
$(BUILD)/tests/vm/status-fetch: tests/vm/tools/status-fetch.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@ (static)"
	@$(CC) -std=c17 -O2 $(WARN) -static -o $@ $<
vm-tools: $(VM_TOOLS)

vm-deps:
	@tests/vm/deps.sh

# The image depends on the initramfs' own sources; the kernel inside
# $(VM_DIR)/kernel is kept once extracted (VM_KERNEL_REFRESH=1 renews it).
$(VM_IMAGE_FILES) &: tests/vm/init tests/vm/build-image.sh | vm-deps
	@tests/vm/build-image.sh

vm-image: vm-deps $(VM_IMAGE_FILES)

# vm-debs (packaging/packaging.mk): the two package builds of scenario 60-package.
vm-test: vm-image vm-debs vm-tools
	@tests/vm/run-scenarios.sh

vm-run: vm-image vm-tools
	@test -n "$(VM_SCENARIO)" || { echo "usage: make vm-run VM_SCENARIO=tests/vm/scenarios/NAME.sh" >&2; exit 2; }
	@tests/vm/run-vm.sh "$(VM_SCENARIO)"

vm-shell: vm-image
	@tests/vm/run-vm.sh -s

vm-clean:
	rm -rf $(VM_DIR)
