// Command pause is the test cluster's sandbox image: it holds a pod's namespaces and waits for the
// signal that ends the pod (no image can be pulled here, so containerd's sandbox image is built too).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
