// The write gate: a MongoDB wire-protocol relay in front of FerretDB that runs the write commands
// on one collection one at a time.
//
// FerretDB 1.24 runs update, findAndModify and delete as a SELECT of the matching documents and
// then an UPDATE (or DELETE) by _id that neither locks nor re-checks the filter. On its
// PostgreSQL backend two writers can therefore both match a document that only one of them
// should (a claim) and both write back a value read before the other's write (an $inc). MongoDB
// makes each single-document write atomic, and the platform's claims, counters and bounded
// queues rely on that. Holding a per-collection gate from a write command until its reply has
// come back gives every write the view of all earlier writes, which is the atomicity MongoDB
// gives. Reads pass straight through, as on MongoDB, where a read never waits for a write.
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

// gates holds one mutex per namespace, created on first use and kept (there are few collections).
type gates struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (g *gates) get(namespace string) *sync.Mutex {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*sync.Mutex{}
	}
	lock, ok := g.m[namespace]
	if !ok {
		lock = &sync.Mutex{}
		g.m[namespace] = lock
	}
	return lock
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

// writeNamespace returns "db.collection" when msg is an acknowledged OP_MSG write command, else "".
// A write sent with moreToCome (w: 0) has no reply to wait for and passes ungated.
func writeNamespace(msg []byte) string {
	if len(msg) <= firstSectionKind || binary.LittleEndian.Uint32(msg[12:16]) != opMsg {
		return ""
	}
	if binary.LittleEndian.Uint32(msg[16:20])&flagMoreToCome != 0 || msg[firstSectionKind] != sectionKindBody {
		return ""
	}
	rest := msg[firstSectionKind+1:]
	if len(rest) < 5 {
		return ""
	}
	docLen := int(int32(binary.LittleEndian.Uint32(rest[:4])))
	if docLen < 5 || docLen > len(rest) {
		return ""
	}
	body := bson.Raw(rest[:docLen])
	first, err := body.IndexErr(0)
	if err != nil || !writeCommands[strings.ToLower(first.Key())] {
		return ""
	}
	collection, ok := first.Value().StringValueOK()
	if !ok {
		return ""
	}
	db, _ := body.Lookup("$db").StringValueOK()
	return db + "." + collection
}

// relay serves one client connection: requests go to FerretDB at backendAddr, a write holding its
// collection's gate until FerretDB's reply to it (matched by responseTo) has been read.
func relay(client net.Conn, backendAddr string, g *gates) {
	defer client.Close()
	backend, err := net.Dial("tcp", backendAddr)
	if err != nil {
		return
	}
	defer backend.Close()

	var mu sync.Mutex
	waiting := map[uint32]*sync.Mutex{} // request id → the gate its write holds
	releaseAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for id, gate := range waiting {
			gate.Unlock()
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
			if gate, ok := waiting[responseTo]; ok {
				delete(waiting, responseTo)
				gate.Unlock()
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
		if namespace := writeNamespace(msg); namespace != "" {
			gate := g.get(namespace)
			gate.Lock()
			mu.Lock()
			waiting[binary.LittleEndian.Uint32(msg[4:8])] = gate
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
