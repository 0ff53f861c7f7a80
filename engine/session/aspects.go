package session

// A client's aspects (issue 34.1): the concerns of a client connection,
// each a view of the one Client (the same memory, no copy, no allocation)
// with the methods of its own files, so that no type carries them all.
// A view reaches the whole client through client().

// aspect is any view of a client: what a task posted for it serves
// (Loop.RunFor's x, closed on a panic: Env.Recovered).
type aspect interface{ client() *Client }

// authn is a client seen as its authentication (auth.go, tls.go,
// loginguard.go): the SASL exchange, the TLS handshake's end, a
// certificate's match, the session's checks and its renewal (KIP-368).
type authn Client

func (cl *Client) authn() *authn  { return (*authn)(cl) }
func (cl *authn) client() *Client { return (*Client)(cl) }

// producer is a client seen as the producer of a large request relayed as
// it arrives (produce_stream.go, produce_splice.go): streamed, its records
// spliced from its socket to its broker's.
type producer Client

func (cl *Client) producer() *producer { return (*producer)(cl) }
func (cl *producer) client() *Client   { return (*Client)(cl) }

// flow is a client seen as its flow control (flow.go, inbound.go): its
// reads paused for a reason, what it sent counted in its budgets, its
// broker connection's marks.
type flow Client

func (cl *Client) flow() *flow   { return (*flow)(cl) }
func (cl *flow) client() *Client { return (*Client)(cl) }

// quotas is a client seen as its quotas (quota.go, quota_pace.go): KIP-219's
// hold, gate, throttle and silence, a streamed Produce paced.
type quotas Client

func (cl *Client) quotas() *quotas { return (*quotas)(cl) }
func (cl *quotas) client() *Client { return (*Client)(cl) }

// auditor is a client seen as its signals (audit.go, trace.go,
// metrics_client.go): its requests audited, counted and traced.
type auditor Client

func (cl *Client) auditor() *auditor { return (*auditor)(cl) }
func (cl *auditor) client() *Client  { return (*Client)(cl) }

// answers is a client seen as what it is written (client_write.go): the
// answers owed, in order, and the gateway's own.
type answers Client

func (cl *Client) answers() *answers { return (*answers)(cl) }
func (cl *answers) client() *Client  { return (*Client)(cl) }
