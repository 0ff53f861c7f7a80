// Package signals is what the gateway says about its connections (O1, O2,
// seed 001 "Signaux"): every flexway_kafka_* series with the seed's closed
// dimensions (Set, TenantSeries), the table of why a connection closes
// with its one log line and its one counter (CloseCause), and the log
// lines bounded to so many a second (RateLimiter).
//
// Invariants it owns:
//   - A tenant's series are made once, when the tenant first authenticates
//     on a cluster (Set.Tenant), and a connection keeps a pointer to them:
//     the request path finds its counter by array index (API, decision,
//     cause; quota, scope; direction), without formatting a name, taking a
//     lock or allocating once the counter exists
//     (TestMetricsRequestPathAllocs).
//   - The first MaxTenants (200) tenants keep their own series; the rest
//     share LabelOther ("_other"). A connection counts under LabelNoCluster
//     until its SNI is read and LabelAnonymous until it authenticates.
//   - Every label value is one of a closed table, or a name of the
//     configuration kept to [A-Za-z0-9._-]: never a topic, a client id, a
//     user, a key or an address. MetricNames is every family exported.
//   - Every close cause has exactly one entry in one table: one log line
//     (or none, when its call site writes a line only it knows), and at
//     most one counter label, a normal closure's only (auth_timeout,
//     idle_timeout, max_session_lifetime), never a refusal
//     (TestCloseCausesTable).
//   - Lines written before authentication (refusals) are rate-limited,
//     RefusalsPerSecond (10) a second; the lines dropped are counted on
//     the next line let through (lines_dropped).
package signals
