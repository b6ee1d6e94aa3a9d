// Command etcd runs one etcd member for the test cluster: the etcd server module's own embed package,
// so the project builds it from a pinned Go module like the Kubernetes binaries (no binary committed).
package main

import (
	"flag"
	"log"
	"net/url"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "where etcd keeps its data")
	client := flag.String("listen-client", "http://127.0.0.1:2379", "the client URL (the API server's --etcd-servers)")
	peer := flag.String("listen-peer", "http://127.0.0.1:2380", "the peer URL (a single member: nobody connects)")
	flag.Parse()

	clientURL, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("--listen-client: %v", err)
	}
	peerURL, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("--listen-peer: %v", err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	cfg.LogLevel = "warn"

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	defer server.Close()
	<-server.Server.ReadyNotify()
	log.Print("etcd ready")
	log.Fatal(<-server.Err())
}
