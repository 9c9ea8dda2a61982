// The do-nothing scheduler extender of bench_extender_cost.py --versus-floor, in Go:
// net/http over TLS (HTTP/1.1, as kube-scheduler speaks to the webhook), the webhook's
// certificates, answering POST /prioritize with [] once the body is read. What an
// extender costs kube-scheduler here whatever it is written in.
//
//	floor_extender CERTS_DIR HOST:PORT
package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: floor_extender CERTS_DIR HOST:PORT")
	}
	certs, addr := os.Args[1], os.Args[2]
	ca, err := os.ReadFile(certs + "/ca.crt")
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		log.Fatal("no certificate in ", certs+"/ca.crt")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/prioritize", func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			log.Printf("refused %s: no verified client certificate", r.RemoteAddr)
			http.Error(w, "a client certificate is required", http.StatusForbidden)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("[]"))
	})
	server := &http.Server{Addr: addr, Handler: mux,
		TLSConfig: &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven},
		// HTTP/1.1 only, as the webhook serves it
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	log.Fatal(server.ListenAndServeTLS(certs+"/tls.crt", certs+"/tls.key"))
}
