// The write gate: a MongoDB wire-protocol relay in front of FerretDB that runs the write commands
// on one document one at a time, and a write that may touch any document of a collection alone.
//
// FerretDB 1.24 runs update, findAndModify and delete as a SELECT of the matching documents and
// then an UPDATE (or DELETE) by _id that neither locks nor re-checks the filter. On its
// PostgreSQL backend two writers can therefore both match a document that only one of them
// should (a claim) and both write back a value read before the other's write (an $inc). MongoDB
// makes each single-document write atomic, and the platform's claims, counters and bounded
// queues rely on that. Holding a gate from a write command until its reply has come back gives
// every write the view of all earlier writes that could touch the same documents, which is the
// atomicity MongoDB gives: the document's gate for a write whose filter fixes one _id (claims,
// counters, projections by id), the whole collection for any other filter, and neither for an
// insert (which reads nothing; a duplicate _id is refused by the table's key, as on MongoDB).
// Reads pass straight through, as on MongoDB, where a read never waits for a write.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/bson"
)

const (
	opMsg            = 2013
	msgHeaderLen     = 16
	maxMessageLen    = 48 * 1000 * 1000 // MongoDB's maxMessageSizeBytes
	flagMoreToCome   = 1 << 1
	sectionKindBody  = 0
	firstSectionKind = msgHeaderLen + 4
)

// writeCommands are the commands FerretDB serves as read-then-write; lower case, as the server
// matches command names case-insensitively for findAndModify.
var writeCommands = map[string]bool{"insert": true, "update": true, "delete": true, "findandmodify": true}

// A write's reach within its collection.
type reach int

const (
	anyDocument  reach = iota // a filter that may match any document: the whole collection's gate
	oneDocument               // one statement whose filter fixes _id: that document's gate
	newDocuments              // inserts: no existing document is read, so no document's gate
)

// collectionGate orders the writes on one collection. A write that may touch any document holds
// `all` exclusively; a write confined to one _id holds it shared plus that document's own gate, so
// writes on different documents run side by side and writes on one document one at a time.
type collectionGate struct {
	all  sync.RWMutex
	mu   sync.Mutex
	docs map[string]*documentGate
}

type documentGate struct {
	sync.Mutex
	users int // holders and waiters; the entry is dropped at zero
}

func (c *collectionGate) document(id string) *documentGate {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.docs[id]
	if !ok {
		d = &documentGate{}
		c.docs[id] = d
	}
	d.users++
	return d
}

func (c *collectionGate) done(id string, d *documentGate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.users--; d.users == 0 {
		delete(c.docs, id)
	}
}

// enter blocks until the write may run and returns the function that lets the next one in.
func (c *collectionGate) enter(r reach, id string) func() {
	switch r {
	case oneDocument:
		c.all.RLock()
		d := c.document(id)
		d.Lock()
		return func() {
			d.Unlock()
			c.done(id, d)
			c.all.RUnlock()
		}
	case newDocuments:
		c.all.RLock()
		return c.all.RUnlock
	default:
		c.all.Lock()
		return c.all.Unlock
	}
}

// gates holds one collectionGate per namespace, created on first use and kept (there are few collections).
type gates struct {
	mu sync.Mutex
	m  map[string]*collectionGate
}

func (g *gates) get(namespace string) *collectionGate {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*collectionGate{}
	}
	c, ok := g.m[namespace]
	if !ok {
		c = &collectionGate{docs: map[string]*documentGate{}}
		g.m[namespace] = c
	}
	return c
}

// readMessage reads one whole wire message (header included).
func readMessage(r *bufio.Reader) ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(lenBuf[:])))
	if n < msgHeaderLen || n > maxMessageLen {
		return nil, fmt.Errorf("wire message length %d out of range", n)
	}
	msg := make([]byte, n)
	copy(msg, lenBuf[:])
	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}
	return msg, nil
}

// write is an acknowledged write command as the gate sees it.
type write struct {
	namespace string // "db.collection"
	reach     reach
	id        string // the fixed _id (its BSON type and bytes) when reach is oneDocument
}

// parseWrite recognises an acknowledged OP_MSG write command. A write sent with moreToCome (w: 0)
// has no reply to wait for and passes ungated, as does anything that is not a write.
func parseWrite(msg []byte) (write, bool) {
	if len(msg) <= firstSectionKind || binary.LittleEndian.Uint32(msg[12:16]) != opMsg {
		return write{}, false
	}
	if binary.LittleEndian.Uint32(msg[16:20])&flagMoreToCome != 0 || msg[firstSectionKind] != sectionKindBody {
		return write{}, false
	}
	rest := msg[firstSectionKind+1:]
	if len(rest) < 5 {
		return write{}, false
	}
	docLen := int(int32(binary.LittleEndian.Uint32(rest[:4])))
	if docLen < 5 || docLen > len(rest) {
		return write{}, false
	}
	body := bson.Raw(rest[:docLen])
	first, err := body.IndexErr(0)
	if err != nil {
		return write{}, false
	}
	command := strings.ToLower(first.Key())
	if !writeCommands[command] {
		return write{}, false
	}
	collection, ok := first.Value().StringValueOK()
	if !ok {
		return write{}, false
	}
	db, _ := body.Lookup("$db").StringValueOK()
	w := write{namespace: db + "." + collection, reach: anyDocument}
	var filter bson.RawValue
	switch command {
	case "insert":
		w.reach = newDocuments
		return w, true
	case "findandmodify":
		filter = body.Lookup("query")
	case "update", "delete":
		statements := "updates"
		if command == "delete" {
			statements = "deletes"
		}
		if only, ok := onlyElement(body.Lookup(statements)); ok {
			filter = only.Lookup("q")
		}
	}
	if id, ok := fixedID(filter); ok {
		w.reach, w.id = oneDocument, id
	}
	return w, true
}

// onlyElement is the document in an array of exactly one document.
func onlyElement(v bson.RawValue) (bson.Raw, bool) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, false
	}
	values, err := arr.Values()
	if err != nil || len(values) != 1 {
		return nil, false
	}
	return values[0].DocumentOK()
}

// fixedID is the filter's `_id` when the filter names one string or ObjectId for it: such a
// filter matches that document or none. Numbers do not count (1, 1.0 and NumberLong(1) are one
// _id to the store but three spellings here), nor does an operator ({$in: …}) or a document.
func fixedID(filter bson.RawValue) (string, bool) {
	doc, ok := filter.DocumentOK()
	if !ok {
		return "", false
	}
	id, err := doc.LookupErr("_id")
	if err != nil {
		return "", false
	}
	switch id.Type {
	case bson.TypeString, bson.TypeObjectID:
		return string(rune(id.Type)) + string(id.Value), true
	}
	return "", false
}

// relay serves one client connection: requests go to FerretDB at backendAddr, a write holding its
// gate until FerretDB's reply to it (matched by responseTo) has been read.
func relay(client net.Conn, backendAddr string, g *gates) {
	defer client.Close()
	backend, err := net.Dial("tcp", backendAddr)
	if err != nil {
		return
	}
	defer backend.Close()

	var mu sync.Mutex
	waiting := map[uint32]func(){} // request id → what lets the next write in once its reply is read
	releaseAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for id, leave := range waiting {
			leave()
			delete(waiting, id)
		}
	}
	defer releaseAll()

	replies := make(chan struct{})
	go func() {
		defer close(replies)
		defer client.Close()
		r := bufio.NewReader(backend)
		for {
			msg, err := readMessage(r)
			if err != nil {
				return
			}
			responseTo := binary.LittleEndian.Uint32(msg[8:12])
			mu.Lock()
			if leave, ok := waiting[responseTo]; ok {
				delete(waiting, responseTo)
				leave()
			}
			mu.Unlock()
			if _, err := client.Write(msg); err != nil {
				return
			}
		}
	}()

	r := bufio.NewReader(client)
	for {
		msg, err := readMessage(r)
		if err != nil {
			break
		}
		if w, ok := parseWrite(msg); ok {
			leave := g.get(w.namespace).enter(w.reach, w.id)
			mu.Lock()
			waiting[binary.LittleEndian.Uint32(msg[4:8])] = leave
			mu.Unlock()
		}
		if _, err := backend.Write(msg); err != nil {
			break
		}
	}
	backend.Close()
	<-replies
}

// serveGated accepts client connections on ln and relays each to FerretDB at backendAddr.
func serveGated(ln net.Listener, backendAddr string) {
	g := &gates{}
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go relay(conn, backendAddr, g)
	}
}
