// Command ferretdb-shim runs FerretDB (the MongoDB wire protocol on PostgreSQL) embedded as a library.
//
// Switchboard's dev, test, fuzz and bench stacks use it as their MongoDB, stored in an embedded
// PostgreSQL cluster given by -postgresql-url (infra/postgres.ts starts it). The upstream
// cmd/ferretdb needs version files generated at release time, so we embed the library package.
// Without -postgresql-url it serves the SQLite files in -data-dir: the store before PostgreSQL,
// kept only so that such a directory can be read once and copied over (infra/dev-store.ts).
// Clients reach FerretDB through the write gate (writelock.go), which makes single-document
// writes atomic as they are on MongoDB.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on (port 0 picks a free port)")
	dataDir := flag.String("data-dir", ".data/ferretdb", "directory holding the SQLite databases (without -postgresql-url)")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	postgresqlURL := flag.String("postgresql-url", "", "store in this PostgreSQL database (-data-dir is then unused)")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-shim: bad -log-level %q: %v\n", *logLevel, err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	config := &ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:   logger,
	}
	if *postgresqlURL != "" {
		config.Handler = "postgresql"
		config.PostgreSQLURL = *postgresqlURL
	} else {
		dir, err := filepath.Abs(*dataDir)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "ferretdb-shim: data dir: %v\n", err)
			os.Exit(1)
		}
		// WAL (FerretDB's default) with synchronous=NORMAL, as SQLite advises for WAL: a commit no
		// longer waits for an fsync, and a crash of any process, FerretDB's included, still loses
		// nothing; only the machine losing power can drop the last commits, which a dev store can afford.
		config.Handler = "sqlite"
		config.SQLiteURL = "file:" + dir + "/?_pragma=synchronous(normal)"
	}

	f, err := ferretdb.New(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-shim: %v\n", err)
		os.Exit(1)
	}

	// Bind the clients' address before FerretDB starts, so that a taken port fails fast.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-shim: listen: %v\n", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()

	// FerretDB's listener is bound by now; its URI names the port the gate relays to.
	backend, err := url.Parse(f.MongoDBURI())
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-shim: FerretDB address: %v\n", err)
		os.Exit(1)
	}
	go serveGated(ln, backend.Host)
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()

	// Print the clients' URI so a parent process can read the real port.
	fmt.Printf("ferretdb-shim listening mongodb://%s/\n", ln.Addr())
	<-done
}
