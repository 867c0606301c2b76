# Kubernetes' own node conformance tests against cubelet (tests/conformance/README.md).
#   make conformance-peers   e2e.test, agnhost and nonewprivs from k8s.io/kubernetes at the release
#                            tests/conformance/go.mod pins (Go; ~13 CPU-minutes cold, seconds warm)
#   make conformance         the node conformance set against the real kubelet 1.34.4 and against
#                            cubelet, both at once (two control planes), then the Serial,
#                            Disruptive and Slow ones likewise, then the table (build/conformance/table.md);
#                            CONFORMANCE_SHARD=i/n runs a part, CONFORMANCE_FOCUS a regex of names
CONFORMANCE_DIR := $(BUILD)/conformance
CONFORMANCE_GO  := tests/conformance/go.mod tests/conformance/go.sum

.PHONY: conformance-peers conformance
conformance-peers: $(CONFORMANCE_DIR)/e2e.test $(CONFORMANCE_DIR)/agnhost $(CONFORMANCE_DIR)/nonewprivs \
	$(CONFORMANCE_DIR)/localhost.crt $(CONFORMANCE_DIR)/localhost.key
$(CONFORMANCE_DIR)/e2e.test: $(CONFORMANCE_GO)
	@mkdir -p $(dir $@)
	@echo "  GO      $@"
	@cd tests/conformance && CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(abspath $@) k8s.io/kubernetes/test/e2e
$(CONFORMANCE_DIR)/agnhost $(CONFORMANCE_DIR)/nonewprivs: $(CONFORMANCE_DIR)/%: $(CONFORMANCE_GO)
	@mkdir -p $(dir $@)
	@echo "  GO      $@"
	@cd tests/conformance && CGO_ENABLED=0 $(GO) build -trimpath -o $(abspath $@) k8s.io/kubernetes/test/images/$*
# the agnhost image's /localhost.crt and /localhost.key, as upstream's Dockerfile adds them (netexec's TLS)
$(CONFORMANCE_DIR)/localhost.crt $(CONFORMANCE_DIR)/localhost.key: $(CONFORMANCE_DIR)/%: $(CONFORMANCE_GO)
	@mkdir -p $(dir $@)
	@cd tests/conformance && src=$$($(GO) list -m -f '{{.Dir}}' k8s.io/kubernetes) && \
		install -m 0644 "$$src/test/images/agnhost/porter/$*" $(abspath $@)

conformance: $(B)/cubelet images cluster-peers conformance-peers
	CONFORMANCE_SERIAL=1 tests/conformance/both.sh $(B) $(CONFORMANCE_DIR)
