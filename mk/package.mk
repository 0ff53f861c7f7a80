# The Debian packages (issue 10.6, SPEC P1): a static binary per architecture
# (CGO_ENABLED=0, -trimpath) and a .deb for each, made by nfpm from
# packaging/nfpm.yaml: /usr/bin/flexway, the systemd unit, /etc/flexway/ with the
# example configuration (conffiles), the flexway system user (packaging/postinst).
#   make package              bin/flexway_<version>_amd64.deb and _arm64.deb
#   make package-amd64        one architecture
#   make test-package         the amd64 .deb unpacked into a scratch root, its
#                             binary's -check on the installed example, the unit verified
# nfpm is pinned and installed into bin/tools by the Go toolchain.

NFPM_VERSION := v2.48.0
NFPM         := $(CURDIR)/bin/tools/nfpm
VERSION      ?= 0.1.0
PKG_ARCHES   := amd64 arm64

.PHONY: package test-package $(addprefix package-,$(PKG_ARCHES))

$(NFPM):
	GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

package: $(addprefix package-,$(PKG_ARCHES))

$(addprefix package-,$(PKG_ARCHES)): package-%: $(NFPM)
	@mkdir -p bin/pkg/$*
	CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -trimpath -ldflags '-s -w' -o bin/pkg/$*/flexway ./cmd/flexway
	sed -e 's|/usr/local/bin/flexway|/usr/bin/flexway|g' -e 's|/usr/local/share/doc/|/usr/share/doc/|g' \
	    -e 's|Installed by `make install`.|Installed by the flexway package.|' \
	    configs/systemd/flexway.service > bin/pkg/$*/flexway.service
	sed -e 's|$${ARCH}|$*|g' -e 's|$${VERSION}|$(VERSION)|g' -e 's|$${PKGDIR}|bin/pkg/$*|g' packaging/nfpm.yaml > bin/pkg/$*/nfpm.yaml
	$(NFPM) package -f bin/pkg/$*/nfpm.yaml -p deb -t bin/

test-package: package-amd64
	scripts/test-package.sh bin/flexway_$(VERSION)_amd64.deb
