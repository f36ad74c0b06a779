// compose-config loads a Compose file as `docker compose config` does (the Compose
// specification's schema, interpolation from an env file, merge rules), with the compose-go
// library Docker Compose itself uses, and prints the resolved project; a non-zero exit says why
// the file is invalid. Used by deploy/lint.sh where the docker compose plugin is not installed.
// A third argument names the profiles to enable, comma-separated (`*` for all), as --profile does.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 3 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: compose-config <compose.yaml> <env file> [profiles]")
		os.Exit(2)
	}
	fns := []cli.ProjectOptionsFn{cli.WithEnvFiles(os.Args[2]), cli.WithDotEnv, cli.WithName("switchboard")}
	if len(os.Args) == 4 {
		fns = append(fns, cli.WithProfiles(strings.Split(os.Args[3], ",")))
	}
	options, err := cli.NewProjectOptions([]string{os.Args[1]}, fns...)
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
