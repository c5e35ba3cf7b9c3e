# bash completion for provision(1).  Kept in step with the command table by
# tests/t0001-cli.sh: every command and option provision has is listed here.

_provision() {
	local cur prev cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	local commands="up plan check bench add-node upgrade renew-certs backup restore remove-node reset forget-host inventory run status history diff show logs bundle fetch"

	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done

	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
		return
	fi

	case $prev in
	-i|--inventory)
		COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	-o|--output)
		COMPREPLY=($(compgen -W "text json" -- "$cur"))
		return ;;
	-p|--phases)
		COMPREPLY=($(compgen -W "prep kube-packages nfs all" -- "$cur"))
		return ;;
	--junit)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--roles|--state|--cache)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	-f|--forks|-t|--timeout|-l|--limit|-n|--interval|--max-count)
		return ;;
	esac

	local opts
	case $cmd in
	up|plan)
		opts="--inventory -i --limit -l --phases -p --forks -f --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --channel-per-command --help" ;;
	add-node)
		opts="--inventory -i --phases -p --forks -f --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	check)
		opts="--inventory -i --limit -l --forks -f --no-tui --output -o --junit --state --roles --verbose -v --ask-sudo-password -K --bench --help" ;;
	bench)
		opts="--inventory -i --limit -l --forks -f --repeat --cpu-limit --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	renew-certs)
		opts="--inventory -i --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	upgrade)
		opts="--inventory -i --parallel --drain-timeout --no-backup --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	backup)
		opts="--inventory -i --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	restore)
		opts="--inventory -i --yes -y --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	remove-node)
		opts="--inventory -i --drain-timeout --force --keep-prep --yes -y --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	reset)
		opts="--inventory -i --limit -l --keep-prep --yes -y --forks -f --no-tui --output -o --verbose -v --roles --state --ask-sudo-password -K --help" ;;
	forget-host)
		opts="--inventory -i --fingerprint --yes -y --help" ;;
	inventory)
		opts="--inventory -i --output -o --help" ;;
	run)
		opts="--inventory -i --limit -l --forks -f --sudo --ask-sudo-password -K --group -g --output -o --timeout -t --channel-per-command --help" ;;
	status)
		opts="--inventory -i --limit -l --forks -f --interval -n --no-tui --ask-sudo-password -K --channel-per-command --help" ;;
	history)
		opts="--inventory -i --state --max-count -n --output -o --help" ;;
	diff|logs)
		opts="--inventory -i --state --help" ;;
	show)
		opts="--inventory -i --state --all -a --help" ;;
	bundle)
		opts="--inventory -i --state --output -o --help" ;;
	fetch)
		opts="--inventory -i --roles --phases -p --cache --all --images --list --state --record --timeout --max-size --max-time --help" ;;
	esac
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _provision provision
