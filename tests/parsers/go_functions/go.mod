module faultreference/gofunctions

go 1.18
