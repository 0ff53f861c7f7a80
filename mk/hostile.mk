# make hostile (issue 33.8, B2 B3 L3 O4): every attack of internal/hostile at
# full size against the built binary (framing, sizes, slow bytes, resets,
# unauthenticated floods, other tenants' names, unread fetches, pipelines,
# partial frames, admin and login floods, broken reloads), each one's
# figures printed (RSS, descriptors, goroutines before/peak/after; log
# bytes); fails on any bound passed. The quick subset runs in make test.
.PHONY: hostile
hostile:
	$(GO) test ./internal/hostile -run '^TestHostile$$' -count=1 -v -timeout 20m -hostile.full
