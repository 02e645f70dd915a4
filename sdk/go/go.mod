module crashcells/sdk/go

go 1.19
