// Command argocd-cmp-harness runs Argo CD's own config management plugin server and drives it
// the way Argo CD's repo-server does, so that the tests run the tjc plugin end to end.
//
//	argocd-cmp-harness cmp-server [argocd-cmp-server flags]
//	    Argo CD's argocd-cmp-server command, unchanged (ARGOCD_PLUGINSOCKFILEPATH: socket dir).
//	argocd-cmp-harness generate REPO_ROOT APP_PATH [-plugin NAME] [-app NAME] [-namespace NS]
//	    [-revision SHA] [-repo URL] [-target-revision REV] [-kube-version V] [-api-versions L]
//	    [-env NAME=VALUE]...
//	    What the repo-server does for an Application with a plugin source: the build
//	    environment (ARGOCD_APP_*, KUBE_*, the Application's plugin env as ARGOCD_ENV_*), plugin
//	    discovery over the sockets (or the named plugin), the repository streamed as a tarball,
//	    and the manifests it gets back, printed as a YAML stream. Exit 1 when any step fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/app/discovery"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/protobuf/types/known/emptypb"
)

type envList []string

func (e *envList) String() string     { return strings.Join(*e, ",") }
func (e *envList) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cmp-server" {
		cmd := commands.NewCommand()
		cmd.SetArgs(os.Args[2:])
		if err := cmd.Execute(); err != nil {
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 4 || os.Args[1] != "generate" {
		fmt.Fprintln(os.Stderr, "usage: argocd-cmp-harness cmp-server [flags] | generate REPO_ROOT APP_PATH [flags]")
		os.Exit(2)
	}
	if err := generate(os.Args[2], os.Args[3], os.Args[4:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func generate(repoRoot, appRel string, args []string) error {
	flags := flag.NewFlagSet("generate", flag.ExitOnError)
	plugin := flags.String("plugin", "", "plugin name (<name>-<version>); empty: discovery")
	app := flags.String("app", "demo", "ARGOCD_APP_NAME")
	namespace := flags.String("namespace", "default", "ARGOCD_APP_NAMESPACE")
	revision := flags.String("revision", "0123456789abcdef0123456789abcdef01234567", "ARGOCD_APP_REVISION")
	repo := flags.String("repo", "https://git.example.com/apps.git", "ARGOCD_APP_SOURCE_REPO_URL")
	target := flags.String("target-revision", "HEAD", "ARGOCD_APP_SOURCE_TARGET_REVISION")
	kubeVersion := flags.String("kube-version", "1.34.0", "KUBE_VERSION")
	apiVersions := flags.String("api-versions", "v1,apps/v1", "KUBE_API_VERSIONS")
	var pluginEnv envList
	flags.Var(&pluginEnv, "env", "the Application's spec.source.plugin.env entry NAME=VALUE")
	if err := flags.Parse(args); err != nil {
		return err
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return err
	}
	appPath := filepath.Join(root, appRel)
	short := func(n int) string { return (*revision)[:min(n, len(*revision))] }
	base := v1alpha1.Env{
		{Name: "ARGOCD_APP_NAME", Value: *app},
		{Name: "ARGOCD_APP_NAMESPACE", Value: *namespace},
		{Name: "ARGOCD_APP_PROJECT_NAME", Value: "default"},
		{Name: "ARGOCD_APP_REVISION", Value: *revision},
		{Name: "ARGOCD_APP_REVISION_SHORT", Value: short(7)},
		{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: short(8)},
		{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: *repo},
		{Name: "ARGOCD_APP_SOURCE_PATH", Value: appRel},
		{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: *target},
		{Name: "KUBE_VERSION", Value: *kubeVersion},
		{Name: "KUBE_API_VERSIONS", Value: *apiVersions},
	}
	env := base.Environ()
	for _, entry := range pluginEnv {
		name, value, _ := strings.Cut(entry, "=")
		env = append(env, fmt.Sprintf("ARGOCD_ENV_%s=%s", name, base.Envsubst(value)))
	}

	ctx := context.Background()
	conn, client, err := discovery.DetectConfigManagementPlugin(ctx, appPath, root, *plugin, env, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := client.CheckPluginConfiguration(ctx, &emptypb.Empty{}); err != nil {
		return fmt.Errorf("checkPluginConfiguration: %w", err)
	}
	stream, err := client.GenerateManifest(ctx, grpc_retry.Disable())
	if err != nil {
		return err
	}
	if err := cmp.SendRepoStream(stream.Context(), appPath, root, stream, env, nil); err != nil {
		return fmt.Errorf("sending the repository: %w", err)
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("CMP processing failed for application %q: %w", *app, err)
	}
	for _, manifest := range resp.Manifests {
		fmt.Printf("---\n%s\n", manifest)
	}
	return nil
}
