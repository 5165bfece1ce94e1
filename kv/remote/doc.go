// Package remote is a kv engine whose transactions run in another process:
// a Server serves a kv.Database (the embedded engine's file database, in
// the "first opener serves" scheme) to clients on a connection (a Unix
// socket in the database's directory, or a net.Pipe), and a DB is a client
// of it, a kv.Database. The clients talk to the server as a FoundationDB
// client talks to a cluster: a read version, reads, a commit; and, as on
// FoundationDB, a commit may end in commit_unknown_result (1021), so DB
// does not implement kv.CertainCommits (nor kv.CommitQueuer).
//
//	srv := remote.NewServer(db, remote.ServerOptions{})
//	go srv.Serve(listener)
//	...
//	client, err := remote.Dial(ctx, remote.Options{Dial: func(ctx context.Context) (net.Conn, error) {
//		var d net.Dialer
//		return d.DialContext(ctx, "unix", path)
//	}})
//
// # Semantics
//
// Each attempt of a client transaction is a transaction of the served
// database, made when the client's first operation reaches the server, to
// which the server applies the client's operations in the order the client
// made them. Results, read-your-writes, snapshot reads, conflicts, atomic
// operations, the size limits, the 5-second limit, the metadata version
// and watches are therefore the served engine's own; the contract suite
// (kv/kvtest) runs unchanged. What the client decides itself:
//
//   - That the transaction ended (client_invalid_operation after a commit,
//     transaction_cancelled after Cancel or once the context is done) and
//     that a future's attempt was reset, with the engines' errors.
//   - Range iterators: each page is a read of what is left of the range
//     through the server's snapshot view (the rows read ahead conflict
//     with nothing); a serializable iterator records its read conflict as
//     far as its rows were consumed (the whole range once exhausted) and
//     sends it with the commit, as kv/fdb does over FoundationDB's
//     batches. A page sees the transaction's writes made before it was
//     requested. Pages start at 16 rows and double up to 1,024 (want-all:
//     1,024 at once; small: 16), and the server cuts one at about 256 KiB,
//     so a huge range costs bounded memory on both sides.
//   - The context: an operation checks it before it is sent, and once it
//     is done the client tells the server, which cancels the engine's
//     transaction (ending a commit's injected latency, a backoff); the
//     engine's cancellation error is reported with the client's context
//     error, as the engines report it.
//   - OnError with an error that is not retryable returns it. Otherwise,
//     while the connection lasts, the server's engine decides: its
//     OnError (its retry limit, its backoff) runs on the server's
//     transaction, which it resets. An attempt whose connection was lost
//     is retried by the client (see below).
//   - Keys longer than 64 KiB (the engines' limit is 10,000 bytes) are not
//     sent: a read of one fails with key_too_large (2102) at once, a write
//     at the commit. A value over kv.MaxValueSize is sent cut to one byte
//     over it, which the engine refuses at the commit (value_too_large,
//     2103) as it would the whole; its detail then names that length.
//
// Writes (Set, Clear, ClearRange, Add, BitAnd, CompareAndClear, the conflict
// ranges, BumpMetadataVersion) are sent and not waited for: an engine's
// error in a write comes with the commit, as from the engines, and an
// engine's error in a conflict range (transaction_too_old) is the
// commit's error. Reads wait for their answer. A future (GetAsync,
// GetRangeAsync) is a request sent when it is issued and answered when its
// response comes, so futures issued together cost one round trip; the
// server reads a range future whole, with the engine's own
// kv.GetRangeAsync (its conflict is the engine's), and sends it in as many
// frames as it takes. GetMany is one request (or one per 256 KiB of keys,
// all sent before the first answer is awaited), First one, the metadata
// version one. Commit sends the iterators' read conflicts and the commit:
// one round trip. A server whose engine has no metadata version says so in
// the handshake: MetadataVersion then answers kv.ErrNoMetadataVersion
// without asking, and a bump does nothing (BumpMetadataVersion still
// reports true: the client cannot know before it connects).
//
// # Connections and goroutines
//
// One connection carries every transaction of a DB: frames name their
// transaction and, if answered, their request. On each side, senders
// append whole frames to one buffer, and a writer goroutine writes all
// that queued up in one call (it yields once before taking the buffer, so
// that goroutines just woken by a batch of answers join the write); a
// reader goroutine dispatches what arrives. On the server, a transaction's
// operations wait in its queue and a worker applies them in order, one
// transaction per worker at a time: a slow operation (a commit waiting for
// the disk, a backoff, a read) holds up its own transaction only. Workers
// come from a pool (an idle one exits after 10 seconds), as a goroutine
// started for each spent as long growing its stack as applying a small
// transaction. A connection's reading waits while 16 MiB of its frames
// wait to be applied, and a sender waits while 8 MiB of frames wait to be
// written. A watch of the server waits on a goroutine of its own.
//
// # Connection loss
//
// When a connection is lost (the server closed, its process dead, a
// failed write), every call waiting for an answer gets one: a commit in
// flight fails with commit_unknown_result (1021), since the server may
// have applied it, and every other operation, and every later one of the
// same attempt, with connection_failed (1026, kv.ErrConnectionFailed),
// which is retryable and not maybe-committed: the server's transaction,
// and its read version, are gone, and nothing of the attempt was
// committed (a commit never sent fails with it too). FoundationDB's
// client hides its own connection_failed behind retries; the remote
// client cannot resend an attempt's operations to a new server at the
// same read version, so it returns the code (kv/errors.go adds it, with
// its predicates, for that). transaction_too_old, which the retry loops
// accept as well, would have told the operator that the transaction ran
// for 5 seconds.
//
// The DB starts reconnecting at once, through Options.Dial, with backoff
// (1 ms doubling to 250 ms), for up to Options.ReconnectTimeout (10 s by
// default); concurrent transactions share that one reconnect. OnError of
// an attempt that lost its connection (within Options.RetryLimit, 100 by
// default) waits a backoff, then for the reconnect, and starts the next
// attempt as a new transaction on the new connection; if the reconnect
// gives up, OnError returns the error, joined with the reconnect's. A
// transaction created while there is no connection fails its first
// operation with connection_failed, and its OnError waits likewise. So
// kv.Transact carries a transaction across a server's restart, and the
// statement layers' receipts make its commits exactly-once under 1021, as
// on FoundationDB. A server of another protocol or fdbqueue version ends
// the reconnect at once.
//
// Closing the Server, like its process dying, never leaves a client
// waiting: Server.Close closes the listeners and connections, cancels
// their transactions (a commit the database already has completes or not;
// its client gets 1021) and their watches, and returns once none of its
// goroutines runs. Closing the DB fails what waits on it likewise, and its
// watches with client_invalid_operation. A server that stays up but stops
// answering (stopped by a signal) leaves a commit waiting; a read returns
// when its context ends.
//
// # Watches
//
// The server makes the engine's watch in the client's transaction and
// tells the client the value it compares with (a snapshot read of the key
// right after it); the engine's watch settling is sent to the client.
// Watch.Cancel fails the client's watch at once and has the server cancel
// its own. A watch whose transaction has not committed when the
// connection is lost fails as its transaction did (1021 if its commit was
// in flight, else 1026). A committed watch outlives its connection, as
// FoundationDB's watches outlive a storage server's failure: once a
// connection is back, the client arms it again, in a transaction that
// makes a new server watch and compares the key's value with the value
// the first compared with, firing it at once if they differ. A change
// made and undone while no server watched is missed: FoundationDB's
// watches miss such an ABA change too. A failure to arm it again with a
// final error (too_many_watches, 1032) fails the watch with it; while no
// server serves, it keeps trying (reconnect after reconnect) until it is
// cancelled or the DB closed, as a FoundationDB watch waits through an
// outage: Wait's context bounds the wait.
//
// So a watch does not fail when its connection is lost, where the brief
// for this package asked for an error the caller could retry: exec's
// FOR POP WAIT (exec/wait.go) ends the statement on any watch error but
// too_many_watches, which it polls through, so a retryable error would
// fail every waiting statement on each restart of the server. Arming
// again keeps the kv.Watch contract (a watch fires when the value
// changes) with no caller's help.
//
// # Wire protocol
//
// A frame is its length (4 bytes, big-endian, not counting itself, 1 to
// 1 MiB: longer is refused before anything is allocated) and its bytes,
// the first its type. Integers are varints (encoding/binary), byte strings
// a uvarint length and the bytes, an optional value a byte (0 absent, 1
// present) and, if present, the bytes.
//
// The client opens with a hello: type 1, "fdbq-kvr", ProtocolVersion,
// fdbqueue's version (ModuleVersion: the module's version in the build
// information, else Version). The server answers (type 64) with its
// protocol and fdbqueue versions, a refusal ("" if none) and capability
// flags. Either side refuses a peer whose versions differ from its own;
// Dial's *VersionError names both sides'.
//
// Client to server, each with the transaction's id first, and a request id
// after it if the frame is answered (marked *):
//
//	 2 begin                            the server makes the transaction
//	 3 get*           flags key         flags: 1 snapshot, 2 reverse, 4 whole
//	 4 get many*      flags n keys...
//	 5 range*         flags limit mode begin end   a page, or (4) a future's whole read
//	 6 first*         flags begin end
//	 7 read version*
//	 8 metadata version* flags
//	 9 set            key value
//	10 clear          key
//	11 clear range    begin end
//	12 add            key delta (8 bytes, little-endian)
//	13 compare and clear key value
//	14 bump metadata version
//	15 read conflict key        key
//	16 read conflict range      begin end
//	17 write conflict key       key
//	18 watch          watch-id key rearm(0|1) [expected value]
//	19 cancel watch   watch-id
//	20 commit*
//	21 on error*      error
//	22 cancel                           cancel and forget the transaction
//	23 abort                            the client's context is done
//	24 call*          payload           (request id in the transaction's place)
//	25 call abort                       (the call's request id) its context is done
//	26 bit and        key param         (ProtocolVersion 3 on)
//	27 write conflict range     begin end (ProtocolVersion 4 on; where the
//	                  hello reply's flag 4 says the server's engine takes them)
//
// Server to client:
//
//	64 hello reply    protocol version refusal flags
//	65 answer         request status(0 last, 1 more follow, 2 error) payload
//	66 watch value    watch-id value: what the watch compares with
//	67 watch done     watch-id [error]: it fired, or failed
//
// An answer's payload is the read's: a value; n values; n rows (key,
// value) and, in the last frame, whether more may follow (a page cut
// short); found and a row; a version; whether OnError retries. Answers of
// many values or rows come in frames of about 256 KiB. A committed
// transaction is forgotten by the server at once; its client sends
// nothing more for it.
//
// A frame that does not decode (a field past its end, a count its bytes
// cannot hold, unknown flags or types, bytes left over, a key over 64 KiB,
// a transaction begun twice, more than 65,536 transactions open at once)
// closes its connection, with the reason logged on the Server's logger;
// the server serves its other connections on.
//
// # Calls
//
// Besides transactions, a server may take calls (ProtocolVersion 2 on):
// DB.Call sends a payload to ServerOptions.Call, which runs it on a
// goroutine of its own and answers, in frames of about 256 KiB; the hello
// reply's capability flag 2 says the server takes them (DB.Call returns
// ErrNoCalls otherwise). kv/shared forwards a client process's autocommit
// pops through them, to run in the serving process (exec/forward.go). A
// call whose connection is lost while it is in flight fails with
// commit_unknown_result (1021): the handler may have run, and may still
// run; the caller's retry must be one the handler can tell from a first
// call. One that could not be sent fails with connection_failed (1026).
// When the caller's context ends, the server is told (the handler's
// context ends), and Call waits for the answer, which may be a result.
// Closing the connection or the server ends the handlers' contexts, and
// Server.Close waits for them to return.
//
// # Errors
//
// An error crosses the wire keeping what callers look at: a *kv.Error
// arrives as one, its code and detail unchanged (errors.Is(err,
// kv.ErrNotCommitted) and kv.Code work); any other error arrives with its
// text, the *kv.Errors of its tree (up to 16 besides the first, so
// kv.IsMaybeCommitted answers as it did for a join), and the sentinels it
// matched under errors.Is among context.Canceled,
// context.DeadlineExceeded, kv.ErrNoMetadataVersion (which arrives as
// itself, for callers that compare it with ==), embedded.ErrFailed (which
// the engine's OnError never retries: the client's error reaches it so)
// and embedded.ErrReadOnly.
//
// # Memory
//
// A value a read returns, like one of the embedded engine, aliases a
// larger block: the frames up to 1 KiB are carved out of 16 KiB slabs, and
// a value kept keeps its slab alive.
//
// # Files
//
//	doc.go        this description
//	wire.go       frames, message types, field encoding, reading frames
//	writer.go     the coalescing frame writer both sides use
//	handshake.go  versions and the handshake
//	errors.go     errors on the wire, and those of a lost connection
//	client.go     Options, DB, Dial, the client's connection and calls, reconnecting
//	txn.go        the client's transactions: attempts, reads, writes, Commit, OnError
//	iter.go       range iterators in pages, and the futures
//	watch.go      the client's watches, armed again after a lost connection
//	calls.go      calls: DB.Call, and the server running its handler
//	server.go     Server: listeners, connections, reading frames, the worker pool
//	stxn.go       the server's transactions: operations applied in order, watches
//	respond.go    the server's answers
package remote
