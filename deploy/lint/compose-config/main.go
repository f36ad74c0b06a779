// compose-config loads a Compose file as `docker compose config` does (the Compose
// specification's schema, interpolation from an env file, merge rules), with the compose-go
// library Docker Compose itself uses, and prints the resolved project; a non-zero exit says why
// the file is invalid. Used by deploy/lint.sh where the docker compose plugin is not installed.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compose-config <compose.yaml> <env file>")
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithEnvFiles(os.Args[2]), cli.WithDotEnv, cli.WithName("switchboard"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := project.MarshalYAML()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
