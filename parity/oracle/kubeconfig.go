package main

// What client-go makes of a kubeconfig file, as a controller started with --kubeconfig FILE
// uses it: clientcmd's deferred loading of that one file (the YAML decoded into the typed v1
// Config, then the current context's user and cluster confirmed usable and turned into a
// rest.Config), then the HTTP client for it (TLS settings, the bearer token round tripper)
// and one request that is never dialled, so that the request path itself (the token's header
// among it) gets its say. Nothing secret is answered: whether a token is there, not what it is.

import (
	"context"
	"errors"
	"net"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type kubeconfigAnswer struct {
	// Verdict is "ok" or "error"; Stage names where client-go refused (config, client,
	// request).
	Verdict  string `json:"verdict"`
	Stage    string `json:"stage,omitempty"`
	Error    string `json:"error,omitempty"`
	Server   string `json:"server,omitempty"`
	Insecure bool   `json:"insecure"`
	Token    bool   `json:"token"`
}

var errNotDialled = errors.New("oracle: requests are never dialled")

func kubeconfig(path string) kubeconfigAnswer {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{})
	config, err := loader.ClientConfig()
	if err != nil {
		return kubeconfigAnswer{Verdict: "error", Stage: "config", Error: err.Error()}
	}
	answer := kubeconfigAnswer{Verdict: "ok", Server: config.Host, Insecure: config.Insecure,
		Token: config.BearerToken != "" || config.BearerTokenFile != ""}
	config.Dial = func(context.Context, string, string) (net.Conn, error) {
		return nil, errNotDialled
	}
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return kubeconfigAnswer{Verdict: "error", Stage: "client", Error: err.Error()}
	}
	base, _, err := rest.DefaultServerUrlFor(config)
	if err != nil {
		return kubeconfigAnswer{Verdict: "error", Stage: "client", Error: err.Error()}
	}
	request, err := http.NewRequest(http.MethodGet, base.String()+"/version", nil)
	if err == nil {
		var response *http.Response
		response, err = client.Do(request)
		if response != nil {
			_ = response.Body.Close()
		}
	}
	if err != nil && !errors.Is(err, errNotDialled) {
		return kubeconfigAnswer{Verdict: "error", Stage: "request", Error: err.Error()}
	}
	return answer
}
